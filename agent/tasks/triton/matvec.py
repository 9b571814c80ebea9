"""Matrix-vector product y = A @ x: each program owns BLOCK_M rows and streams the columns."""

from __future__ import annotations

import numpy as np

from kernelgraph.agent.tasks.base import Arrays, Config, Task
from kernelgraph.agent.tasks.triton._common import (
    Fallback,
    check_pow2,
    header,
    make_task,
    rng,
    set_knobs,
    warps_and_stages,
)
from kernelgraph.agent.transforms import Transform

AOT_M, AOT_N = 8192, 8192


def _make_inputs(seed: int, small: bool) -> Arrays:
    m, n = (53, 301) if small else (AOT_M, AOT_N)
    g = rng(seed)
    return {"a": g.standard_normal((m, n)).astype(np.float32), "x": g.standard_normal(n).astype(np.float32)}


FALLBACK = Fallback(
    name="matvec",
    family="gemv",
    patterns=("streaming", "row-reduction"),
    description="y = A @ x for a float32 (M, N) matrix.",
    make_inputs=_make_inputs,
    output_shapes=lambda a: {"y": (a["a"].shape[0],)},
    reference=lambda a: {"y": (a["a"].astype(np.float64) @ a["x"].astype(np.float64)).astype(np.float32)},
    flops=lambda a: 2.0 * a["a"].size,
    bytes_moved=lambda a: 4.0 * (a["a"].size + a["x"].size + a["a"].shape[0]),
)

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


def task(cpu: Task | None = None) -> Task:
    transforms = (
        set_knobs(
            Transform.TILE,
            {"BLOCK_M": (4, 8, 16, 32, 64), "BLOCK_N": (64, 128, 256, 512)},
            "rows per program and column step",
        ),
        *warps_and_stages(),
    )
    return make_task(FALLBACK, render, BASELINE, transforms, cpu)
