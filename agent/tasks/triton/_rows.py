"""Shared renderer for row-wise kernels (layernorm, rmsnorm): one program per row, or persistent.

A row is either held whole in registers (`looped=False`, BLOCK = next power of two of the row) or
streamed in BLOCK_N tiles twice: once for the statistics, once to normalise and store.
"""

from __future__ import annotations

from collections.abc import Callable

from kernelgraph.agent.tasks.base import Config, Renderer
from kernelgraph.agent.tasks.triton._common import (
    BACKEND,
    NUM_SMS,
    check_pow2,
    header,
    pow2,
    program_loop,
    set_knobs,
    toggle,
    warps_and_stages,
)
from kernelgraph.agent.transforms import Transform

AOT_ROWS, AOT_COLS = 4096, 4096

BASELINE: Config = {"looped": False, "BLOCK_N": 1024, "persistent": False, "num_warps": 8, "num_stages": 1}


def row_renderer(task: str, render: Callable[[Config], str]) -> Renderer:
    """The Triton renderer of a row-wise task: `render` (a `render_rows` call) over the row kernels'
    config space (looped tiles, persistent programs, warps and stages)."""
    transforms = (
        set_knobs(
            Transform.TILE,
            {"looped": (True, False), "BLOCK_N": (256, 512, 1024, 2048)},
            "stream the row in BLOCK_N tiles (looped) instead of holding it whole",
        ),
        toggle(Transform.SCHEDULE, "persistent", "a few programs per SM loop over rows"),
        *warps_and_stages(),
    )
    return Renderer(task, BACKEND, render, BASELINE, transforms)


def render_rows(
    task: str, config: Config, *, centered: bool, weight: str, eps: float, bias: str | None = None
) -> str:
    """The row kernel's module; `launch` takes the task's own input names: `x`, `weight`, `bias`, `y`.
    `eps` is the task's (its C definition's), so that both backends compute the same function."""
    check_pow2(config, "BLOCK_N")
    looped, persistent = bool(config["looped"]), bool(config["persistent"])
    warps, stages = int(config["num_warps"]), int(config["num_stages"])
    block = int(config["BLOCK_N"]) if looped else pow2(AOT_COLS)
    rows = program_loop("row", "n_rows", persistent) + "\n"
    params = "x_ptr, w_ptr, " + ("b_ptr, " if bias else "") + "y_ptr, n_rows, n_cols, stride, eps"
    affine = "y * w + tl.load(b_ptr + offs, mask=mask, other=0.0)" if bias else "y * w"
    if looped:
        stats = (
            "        acc = tl.zeros((BLOCK_N,), dtype=tl.float32)\n"
            + ("        acc2 = tl.zeros((BLOCK_N,), dtype=tl.float32)\n" if centered else "")
            + "        for start in tl.range(0, n_cols, BLOCK_N, num_stages=NUM_STAGES):\n"
            "            offs = start + tl.arange(0, BLOCK_N)\n"
            "            x = tl.load(x_ptr + row * stride + offs, mask=offs < n_cols, other=0.0)\n"
            + (
                "            acc += x\n            acc2 += x * x\n"
                if centered
                else "            acc += x * x\n"
            )
        )
        if centered:
            stats += (
                "        mean = tl.sum(acc, axis=0) / n_cols\n"
                "        var = tl.maximum(tl.sum(acc2, axis=0) / n_cols - mean * mean, 0.0)\n"
            )
        else:
            stats += "        mean = 0.0\n        var = tl.sum(acc, axis=0) / n_cols\n"
        apply = (
            "        rstd = 1.0 / tl.sqrt(var + eps)\n"
            "        for start in tl.range(0, n_cols, BLOCK_N, num_stages=NUM_STAGES):\n"
            "            offs = start + tl.arange(0, BLOCK_N)\n"
            "            mask = offs < n_cols\n"
            "            x = tl.load(x_ptr + row * stride + offs, mask=mask, other=0.0)\n"
            "            w = tl.load(w_ptr + offs, mask=mask, other=0.0)\n"
            "            y = (x - mean) * rstd\n"
            f"            tl.store(y_ptr + row * stride + offs, {affine}, mask=mask)\n"
        )
        body, block_expr = stats + apply, str(block)
    else:
        body = (
            "        offs = tl.arange(0, BLOCK_N)\n"
            "        mask = offs < n_cols\n"
            "        x = tl.load(x_ptr + row * stride + offs, mask=mask, other=0.0)\n"
            + (
                "        mean = tl.sum(x, axis=0) / n_cols\n"
                "        d = tl.where(mask, x - mean, 0.0)\n"
                "        var = tl.sum(d * d, axis=0) / n_cols\n"
                if centered
                else "        mean = 0.0\n        d = x\n        var = tl.sum(x * x, axis=0) / n_cols\n"
            )
            + "        w = tl.load(w_ptr + offs, mask=mask, other=0.0)\n"
            "        y = d / tl.sqrt(var + eps)\n"
            f"        tl.store(y_ptr + row * stride + offs, {affine}, mask=mask)\n"
        )
        block_expr = "triton.next_power_of_2(n_cols)"
    ptrs = ["x_ptr", "w_ptr"] + (["b_ptr"] if bias else []) + ["y_ptr"]
    sig = ", ".join(
        [f'"{p}": "*fp32"' for p in ptrs]
        + ['"n_rows": "i32"', '"n_cols": "i32"', '"stride": "i32"', '"eps": "fp32"']
        + ['"BLOCK_N": "constexpr"', '"NUM_STAGES": "constexpr"']
    )
    args = f"x, {weight}, " + (f"{bias}, " if bias else "") + "y"
    grid = "(min(n_rows, 4 * _num_sms(x)),)" if persistent else "(n_rows,)"
    return (
        header(task, config)
        + f"""

@triton.jit
def {task}_kernel({params}, BLOCK_N: tl.constexpr, NUM_STAGES: tl.constexpr):
{rows}{body}

AOT = [
    {{"kernel": "{task}_kernel", "signature": {{{sig}}},
     "constexprs": {{"BLOCK_N": {block}, "NUM_STAGES": {stages}}}, "num_warps": {warps}, "num_stages": {stages},
     "sizes": {{"rows": {AOT_ROWS}, "cols": {AOT_COLS}}}}},
]


{NUM_SMS}

def launch({args}):
    n_rows, n_cols = x.shape
    {task}_kernel[{grid}](
        {args}, n_rows, n_cols, x.stride(0), {eps!r},
        BLOCK_N={block_expr}, NUM_STAGES={stages}, num_warps={warps}, num_stages={stages},
    )
"""
    )
