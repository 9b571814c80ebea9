"""RMSNorm over the last axis with an affine weight (eps: the C task's, 1e-6)."""

from __future__ import annotations

from kernelgraph.agent.tasks.base import Config, Renderer
from kernelgraph.agent.tasks.rmsnorm import EPS
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
    return render_rows("rmsnorm", config, centered=False, weight="w", eps=EPS)


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
    return Renderer("rmsnorm", BACKEND, render, BASELINE, transforms)
