"""Out-of-place transpose B = A.T with 2D tiles (Triton stages the tile through shared memory)."""

from __future__ import annotations

from kernelgraph.agent.tasks.base import Config, Renderer
from kernelgraph.agent.tasks.triton._common import (
    BACKEND,
    check_pow2,
    header,
    set_knob,
    set_knobs,
    warps_and_stages,
)
from kernelgraph.agent.transforms import Transform

AOT_M, AOT_N = 8192, 8192


BASELINE: Config = {"BLOCK_M": 32, "BLOCK_N": 32, "GROUP_M": 1, "num_warps": 4}


def render(config: Config) -> str:
    check_pow2(config, "BLOCK_M", "BLOCK_N")
    bm, bn, group, warps = (int(config[k]) for k in ("BLOCK_M", "BLOCK_N", "GROUP_M", "num_warps"))
    return (
        header("transpose", config)
        + f"""

@triton.jit
def transpose_kernel(a_ptr, b_ptr, M, N, stride_a, stride_b,
                     BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, GROUP_M: tl.constexpr):
    pid = tl.program_id(0)
    num_m = tl.cdiv(M, BLOCK_M)
    num_n = tl.cdiv(N, BLOCK_N)
    width = GROUP_M * num_n
    first_m = (pid // width) * GROUP_M
    group = tl.minimum(num_m - first_m, GROUP_M)
    pid_m = first_m + (pid % width) % group
    pid_n = (pid % width) // group
    rm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    mask = (rm[:, None] < M) & (rn[None, :] < N)
    tile = tl.load(a_ptr + rm[:, None] * stride_a + rn[None, :], mask=mask)
    tl.store(b_ptr + rn[:, None] * stride_b + rm[None, :], tl.trans(tile), mask=tl.trans(mask))


AOT = [
    {{"kernel": "transpose_kernel",
     "signature": {{"a_ptr": "*fp32", "b_ptr": "*fp32", "M": "i32", "N": "i32", "stride_a": "i32",
                   "stride_b": "i32", "BLOCK_M": "constexpr", "BLOCK_N": "constexpr", "GROUP_M": "constexpr"}},
     "constexprs": {{"BLOCK_M": {bm}, "BLOCK_N": {bn}, "GROUP_M": {group}}},
     "num_warps": {warps}, "num_stages": 1, "sizes": {{"M": {AOT_M}, "N": {AOT_N}}}}},
]


def launch(a, b):
    M, N = a.shape
    grid = (triton.cdiv(M, {bm}) * triton.cdiv(N, {bn}),)
    transpose_kernel[grid](a, b, M, N, a.stride(0), b.stride(0), BLOCK_M={bm}, BLOCK_N={bn}, GROUP_M={group},
                           num_warps={warps})
"""
    )


def renderer() -> Renderer:
    transforms = (
        set_knobs(
            Transform.TILE,
            {"BLOCK_M": (16, 32, 64, 128), "BLOCK_N": (16, 32, 64, 128)},
            "2D tile staged through shared memory",
        ),
        set_knob(
            Transform.BLOCK_FOR_CACHE, "GROUP_M", (1, 4, 8), "swizzle program order for DRAM page locality"
        ),
        warps_and_stages()[0],
    )
    return Renderer("transpose", BACKEND, render, BASELINE, transforms)
