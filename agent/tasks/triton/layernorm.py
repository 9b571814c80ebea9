"""LayerNorm over the last axis with affine weight and bias (eps = 1e-5)."""

from __future__ import annotations

from kernelgraph.agent.tasks.base import Config, Renderer
from kernelgraph.agent.tasks.layernorm import EPS
from kernelgraph.agent.tasks.triton._rows import render_rows, row_renderer


def render(config: Config) -> str:
    return render_rows("layernorm", config, centered=True, weight="gamma", bias="beta", eps=EPS)


def renderer() -> Renderer:
    return row_renderer("layernorm", render)
