"""Row softmax y = exp(x - max) / sum(exp(x - max)) over the last axis of a (rows, cols) matrix."""

from __future__ import annotations

from kernelgraph.agent.tasks.base import Config, Renderer
from kernelgraph.agent.tasks.triton._common import (
    BACKEND,
    NUM_SMS,
    check_pow2,
    header,
    pow2,
    program_loop,
    set_knob,
    toggle,
    warps_and_stages,
)
from kernelgraph.agent.transforms import Transform

AOT_ROWS, AOT_COLS = 4096, 4096


BASELINE: Config = {"online": False, "BLOCK_N": 1024, "persistent": False, "num_warps": 4, "num_stages": 1}


def render(config: Config) -> str:
    """Whole-row-in-registers softmax, or the online (running max and sum) version over column tiles."""
    check_pow2(config, "BLOCK_N")
    online, persistent = bool(config["online"]), bool(config["persistent"])
    warps, stages = int(config["num_warps"]), int(config["num_stages"])
    block = int(config["BLOCK_N"]) if online else pow2(AOT_COLS)
    rows = program_loop("row", "n_rows", persistent) + "\n"
    if online:
        body = (
            "        m = -float('inf')\n"
            "        l = 0.0\n"
            "        for start in tl.range(0, n_cols, BLOCK_N, num_stages=NUM_STAGES):\n"
            "            offs = start + tl.arange(0, BLOCK_N)\n"
            "            x = tl.load(x_ptr + row * x_stride + offs, mask=offs < n_cols, other=-float('inf'))\n"
            "            m_new = tl.maximum(m, tl.max(x, axis=0))\n"
            "            l = l * tl.exp(m - m_new) + tl.sum(tl.exp(x - m_new), axis=0)\n"
            "            m = m_new\n"
            "        for start in tl.range(0, n_cols, BLOCK_N, num_stages=NUM_STAGES):\n"
            "            offs = start + tl.arange(0, BLOCK_N)\n"
            "            x = tl.load(x_ptr + row * x_stride + offs, mask=offs < n_cols, other=-float('inf'))\n"
            "            tl.store(y_ptr + row * y_stride + offs, tl.exp(x - m) / l, mask=offs < n_cols)\n"
        )
        block_expr = str(block)
    else:
        body = (
            "        offs = tl.arange(0, BLOCK_N)\n"
            "        x = tl.load(x_ptr + row * x_stride + offs, mask=offs < n_cols, other=-float('inf'))\n"
            "        e = tl.exp(x - tl.max(x, axis=0))\n"
            "        tl.store(y_ptr + row * y_stride + offs, e / tl.sum(e, axis=0), mask=offs < n_cols)\n"
        )
        block_expr = "triton.next_power_of_2(n_cols)"
    grid = "(min(n_rows, 4 * _num_sms(x)),)" if persistent else "(n_rows,)"
    return (
        header("softmax", config)
        + f"""

@triton.jit
def softmax_kernel(x_ptr, y_ptr, n_rows, n_cols, x_stride, y_stride,
                   BLOCK_N: tl.constexpr, NUM_STAGES: tl.constexpr):
{rows}{body}

AOT = [
    {{
        "kernel": "softmax_kernel",
        "signature": {{"x_ptr": "*fp32", "y_ptr": "*fp32", "n_rows": "i32", "n_cols": "i32",
                      "x_stride": "i32", "y_stride": "i32", "BLOCK_N": "constexpr", "NUM_STAGES": "constexpr"}},
        "constexprs": {{"BLOCK_N": {block}, "NUM_STAGES": {stages}}},
        "num_warps": {warps},
        "num_stages": {stages},
        "sizes": {{"rows": {AOT_ROWS}, "cols": {AOT_COLS}}},
    }},
]


{NUM_SMS}

def launch(x, y):
    n_rows, n_cols = x.shape
    softmax_kernel[{grid}](
        x, y, n_rows, n_cols, x.stride(0), y.stride(0),
        BLOCK_N={block_expr}, NUM_STAGES={stages}, num_warps={warps}, num_stages={stages},
    )
"""
    )


def renderer() -> Renderer:
    transforms = (
        toggle(Transform.FUSE, "online", "stream column tiles with a running max"),
        set_knob(Transform.TILE, "BLOCK_N", (128, 256, 512, 1024, 2048), "column tile of the online loop"),
        toggle(Transform.SCHEDULE, "persistent", "a few programs per SM loop over rows"),
        *warps_and_stages(),
    )
    return Renderer("softmax", BACKEND, render, BASELINE, transforms)
