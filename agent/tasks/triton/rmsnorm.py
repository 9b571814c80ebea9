"""RMSNorm over the last axis with an affine weight (eps: the C task's, 1e-6)."""

from __future__ import annotations

from kernelgraph.agent.tasks.base import Config, Renderer
from kernelgraph.agent.tasks.rmsnorm import EPS
from kernelgraph.agent.tasks.triton._rows import render_rows, row_renderer


def render(config: Config) -> str:
    return render_rows("rmsnorm", config, centered=False, weight="w", eps=EPS)


def renderer() -> Renderer:
    return row_renderer("rmsnorm", render)
