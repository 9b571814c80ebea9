"""Matrix-vector product y = A @ x: each program owns BLOCK_M rows and streams the columns."""

from __future__ import annotations

from kernelgraph.agent.tasks.base import Config, Renderer
from kernelgraph.agent.tasks.triton._common import (
    BACKEND,
    check_pow2,
    header,
    set_knobs,
    warps_and_stages,
)
from kernelgraph.agent.transforms import Transform

AOT_M, AOT_N = 8192, 8192


BASELINE: Config = {"BLOCK_M": 16, "BLOCK_N": 128, "num_warps": 4, "num_stages": 2}


def render(config: Config) -> str:
    check_pow2(config, "BLOCK_M", "BLOCK_N")
    bm, bn = int(config["BLOCK_M"]), int(config["BLOCK_N"])
    warps, stages = int(config["num_warps"]), int(config["num_stages"])
    return (
        header("matvec", config)
        + f"""

@triton.jit
def matvec_kernel(a_ptr, x_ptr, y_ptr, M, N, stride_am,
                  BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, NUM_STAGES: tl.constexpr):
    rm = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for start in tl.range(0, N, BLOCK_N, num_stages=NUM_STAGES):
        rn = start + tl.arange(0, BLOCK_N)
        a = tl.load(a_ptr + rm[:, None] * stride_am + rn[None, :], mask=(rm[:, None] < M) & (rn[None, :] < N),
                    other=0.0)
        x = tl.load(x_ptr + rn, mask=rn < N, other=0.0)
        acc += a * x[None, :]
    tl.store(y_ptr + rm, tl.sum(acc, axis=1), mask=rm < M)


AOT = [
    {{"kernel": "matvec_kernel",
     "signature": {{"a_ptr": "*fp32", "x_ptr": "*fp32", "y_ptr": "*fp32", "M": "i32", "N": "i32",
                   "stride_am": "i32", "BLOCK_M": "constexpr", "BLOCK_N": "constexpr", "NUM_STAGES": "constexpr"}},
     "constexprs": {{"BLOCK_M": {bm}, "BLOCK_N": {bn}, "NUM_STAGES": {stages}}},
     "num_warps": {warps}, "num_stages": {stages}, "sizes": {{"M": {AOT_M}, "N": {AOT_N}}}}},
]


def launch(a, x, y):
    M, N = a.shape
    matvec_kernel[(triton.cdiv(M, {bm}),)](
        a, x, y, M, N, a.stride(0), BLOCK_M={bm}, BLOCK_N={bn}, NUM_STAGES={stages},
        num_warps={warps}, num_stages={stages},
    )
"""
    )


def renderer() -> Renderer:
    transforms = (
        set_knobs(
            Transform.TILE,
            {"BLOCK_M": (4, 8, 16, 32, 64), "BLOCK_N": (64, 128, 256, 512)},
            "rows per program and column step",
        ),
        *warps_and_stages(),
    )
    return Renderer("matvec", BACKEND, render, BASELINE, transforms)
