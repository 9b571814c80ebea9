"""Triton versions of the kernel tasks (backend "triton"), for NVIDIA targets.

Each task reuses the CPU task's numpy side (inputs, reference, roofline counts) when the CPU
registry has a compatible task of the same name, and carries its own otherwise. Its config space
mixes the shared transform vocabulary with Triton knobs (BLOCK sizes, num_warps, num_stages,
grouped launch, split-K, online softmax, persistent kernels, fusion); `Task.source("triton",
config)` renders a module with `@triton.jit` kernels, an `AOT` compile list and `launch(**tensors)`.
"""

from __future__ import annotations

from functools import cache

from kernelgraph.agent.tasks.base import Task

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


def triton_tasks() -> list[Task]:
    """Every Triton task, in a stable order."""
    return list(_load_all())


@cache
def _load_all() -> tuple[Task, ...]:
    from importlib import import_module

    return tuple(import_module(f"kernelgraph.agent.tasks.triton.{name}").task() for name in TASK_MODULES)


def triton_task(name: str) -> Task:
    """One Triton task by name; KeyError names the known ones."""
    if name not in TASK_MODULES:
        raise KeyError(f"no Triton task {name!r}; known: {', '.join(TASK_MODULES)}")
    return next(t for t in _load_all() if t.name == name)


__all__ = ["TASK_MODULES", "triton_task", "triton_tasks"]
