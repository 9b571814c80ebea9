"""LayerNorm over the last axis with affine weight and bias (eps = 1e-5)."""

from __future__ import annotations

from kernelgraph.agent.tasks.base import Config, Renderer
from kernelgraph.agent.tasks.layernorm import EPS
from kernelgraph.agent.tasks.triton._common import (
    BACKEND,
    set_knobs,
    toggle,
    warps_and_stages,
)
from kernelgraph.agent.tasks.triton._rows import render_rows
from kernelgraph.agent.transforms import Transform

BASELINE: Config = {"looped": False, "BLOCK_N": 1024, "persistent": False, "num_warps": 8, "num_stages": 1}


def render(config: Config) -> str:
    return render_rows("layernorm", config, centered=True, weight="gamma", bias="beta", eps=EPS)


def renderer() -> Renderer:
    transforms = (
        set_knobs(
            Transform.TILE,
            {"looped": (True, False), "BLOCK_N": (256, 512, 1024, 2048)},
            "stream the row in BLOCK_N tiles (looped) instead of holding it whole",
        ),
        toggle(Transform.SCHEDULE, "persistent", "a few programs per SM loop over rows"),
        *warps_and_stages(),
    )
    return Renderer("layernorm", BACKEND, render, BASELINE, transforms)
