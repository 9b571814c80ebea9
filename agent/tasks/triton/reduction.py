"""Full sum of a float32 vector: two-pass partial sums, or one pass with atomics, optionally persistent."""

from __future__ import annotations

from kernelgraph.agent.tasks.base import Config, Renderer
from kernelgraph.agent.tasks.triton._common import (
    BACKEND,
    NUM_SMS,
    check_pow2,
    header,
    set_knob,
    toggle,
    warps_and_stages,
)
from kernelgraph.agent.transforms import Transform

AOT_N = 1 << 26


BASELINE: Config = {"BLOCK": 1024, "atomic": False, "persistent": False, "num_warps": 4, "num_stages": 1}


def render(config: Config) -> str:
    check_pow2(config, "BLOCK")
    block, warps, stages = int(config["BLOCK"]), int(config["num_warps"]), int(config["num_stages"])
    atomic, persistent = bool(config["atomic"]), bool(config["persistent"])
    step = "BLOCK * tl.num_programs(0)" if persistent else "n"
    store = "tl.atomic_add(out_ptr, total)" if atomic else "tl.store(out_ptr + tl.program_id(0), total)"
    programs = "min(triton.cdiv(n, BLOCK), 8 * _num_sms(x))" if persistent else "triton.cdiv(n, BLOCK)"
    if atomic:
        host = (
            "    out.zero_()  # atomics accumulate into the output, so it starts at zero\n"
            f"    partial_sum_kernel[(programs,)](x, out, n, BLOCK=BLOCK, NUM_STAGES={stages}, num_warps={warps})\n"
        )
    else:
        host = (
            "    part = torch.empty(programs, dtype=x.dtype, device=x.device)\n"
            f"    partial_sum_kernel[(programs,)](x, part, n, BLOCK=BLOCK, NUM_STAGES={stages}, num_warps={warps})\n"
            "    final_sum_kernel[(1,)](part, out, programs, BLOCK=1024, num_warps=4)\n"
        )
    aot_final = (
        ""
        if atomic
        else '    {"kernel": "final_sum_kernel", "signature": {"part_ptr": "*fp32", "out_ptr": "*fp32", "n": "i32",'
        ' "BLOCK": "constexpr"}, "constexprs": {"BLOCK": 1024}, "num_warps": 4, "num_stages": 1},\n'
    )
    return (
        header("reduction", config)
        + f"""

@triton.jit
def partial_sum_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr, NUM_STAGES: tl.constexpr):
    acc = tl.zeros((BLOCK,), dtype=tl.float32)
    for start in tl.range(tl.program_id(0) * BLOCK, n, {step}, num_stages=NUM_STAGES):
        offs = start + tl.arange(0, BLOCK)
        acc += tl.load(x_ptr + offs, mask=offs < n, other=0.0)
    total = tl.sum(acc, axis=0)
    {store}


@triton.jit
def final_sum_kernel(part_ptr, out_ptr, n, BLOCK: tl.constexpr):
    acc = tl.zeros((BLOCK,), dtype=tl.float32)
    for start in tl.range(0, n, BLOCK):
        offs = start + tl.arange(0, BLOCK)
        acc += tl.load(part_ptr + offs, mask=offs < n, other=0.0)
    tl.store(out_ptr, tl.sum(acc, axis=0))


AOT = [
    {{"kernel": "partial_sum_kernel", "signature": {{"x_ptr": "*fp32", "out_ptr": "*fp32", "n": "i32",
     "BLOCK": "constexpr", "NUM_STAGES": "constexpr"}}, "constexprs": {{"BLOCK": {block}, "NUM_STAGES": {stages}}},
     "num_warps": {warps}, "num_stages": {stages}, "sizes": {{"n": {AOT_N}}}}},
{aot_final}]
BLOCK = {block}


{NUM_SMS}

def launch(x, out):
    import torch

    n = x.numel()
    programs = {programs}
{host}"""
    )


def renderer() -> Renderer:
    transforms = (
        set_knob(Transform.TILE, "BLOCK", (256, 512, 1024, 2048, 4096), "elements per program per step"),
        set_knob(
            Transform.PRIVATIZE,
            "atomic",
            (False, True),
            "False: private partial sums merged by a second kernel; True: one pass with atomics",
        ),
        toggle(Transform.SCHEDULE, "persistent", "grid-stride loop over a few programs per SM"),
        *warps_and_stages(),
    )
    return Renderer("reduction", BACKEND, render, BASELINE, transforms)
