"""LayerNorm over the last axis with affine weight and bias (eps = 1e-5)."""

from __future__ import annotations

import numpy as np

from kernelgraph.agent.tasks.base import Arrays, Config, Task
from kernelgraph.agent.tasks.triton._common import (
    Fallback,
    make_task,
    rng,
    set_knobs,
    toggle,
    warps_and_stages,
)
from kernelgraph.agent.tasks.triton._rows import AOT_COLS, AOT_ROWS, render_rows
from kernelgraph.agent.transforms import Transform


def _make_inputs(seed: int, small: bool) -> Arrays:
    rows, cols = (29, 333) if small else (AOT_ROWS, AOT_COLS)
    g = rng(seed)
    return {
        "x": (g.standard_normal((rows, cols)) * 2.0 + 0.5).astype(np.float32),
        "w": g.standard_normal(cols).astype(np.float32),
        "b": g.standard_normal(cols).astype(np.float32),
    }


def _reference(a: Arrays) -> Arrays:
    x = a["x"].astype(np.float64)
    mu = x.mean(axis=1, keepdims=True)
    var = x.var(axis=1, keepdims=True)
    return {"y": ((x - mu) / np.sqrt(var + 1e-5) * a["w"] + a["b"]).astype(np.float32)}


FALLBACK = Fallback(
    name="layernorm",
    family="row-reduction",
    patterns=("row-reduction", "streaming"),
    description="LayerNorm of a float32 (rows, cols) matrix with weight and bias, eps=1e-5.",
    make_inputs=_make_inputs,
    output_shapes=lambda a: {"y": a["x"].shape},
    reference=_reference,
    flops=lambda a: 8.0 * a["x"].size,
    bytes_moved=lambda a: 8.0 * a["x"].size + 8.0 * a["w"].size,
)

BASELINE: Config = {"looped": False, "BLOCK_N": 1024, "persistent": False, "num_warps": 8, "num_stages": 1}


def render(config: Config) -> str:
    return render_rows("layernorm", config, centered=True, bias=True)


def task(cpu: Task | None = None) -> Task:
    transforms = (
        set_knobs(
            Transform.TILE,
            {"looped": (True, False), "BLOCK_N": (256, 512, 1024, 2048)},
            "stream the row in BLOCK_N tiles (looped) instead of holding it whole",
        ),
        toggle(Transform.SCHEDULE, "persistent", "a few programs per SM loop over rows"),
        *warps_and_stages(),
    )
    return make_task(FALLBACK, render, BASELINE, transforms, cpu)
