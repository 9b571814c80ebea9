"""Triton renderers of the kernel tasks (backend "triton"), for NVIDIA targets.

Each module here registers a `Renderer` for a task defined once in agent/tasks/: the Triton config
space (BLOCK sizes, num_warps, num_stages, grouped launch, split-K, online softmax, persistent
kernels, fusion) and `render(config)`, a module with `@triton.jit` kernels, an `AOT` compile list and
`launch(**tensors)` whose parameters are the definition's input and output names. Inputs, reference
and roofline counts come from the definition only (`kernelgraph.agent.tasks.get_task(name, "triton")`).
"""

from __future__ import annotations

import importlib

from kernelgraph.agent.tasks.base import Renderer, Task

# One module per rendered task, named after the task it renders.
TASK_MODULES = (
    "softmax",
    "matmul",
    "matvec",
    "transpose",
    "layernorm",
    "rmsnorm",
    "reduction",
    "elementwise",
)


def renderers() -> tuple[Renderer, ...]:
    """Every Triton renderer, in a stable order (the registry composes them with the definitions)."""
    return tuple(
        importlib.import_module(f"kernelgraph.agent.tasks.triton.{name}").renderer() for name in TASK_MODULES
    )


def triton_tasks() -> list[Task]:
    """Every Triton task, in a stable order."""
    from kernelgraph.agent.tasks import all_tasks

    return all_tasks("triton")


def triton_task(name: str) -> Task:
    """One Triton task by name; a KeyError names the known ones."""
    from kernelgraph.agent.tasks import get_task

    return get_task(name, "triton")


__all__ = ["TASK_MODULES", "renderers", "triton_task", "triton_tasks"]
