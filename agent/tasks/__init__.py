"""The task registry: every kernel task KernelGraph knows, looked up by name and backend.

Task modules are imported on first use, not at package import.
"""

from __future__ import annotations

import importlib
from functools import cache

from kernelgraph.agent.tasks.base import Task

# One module per task under agent/tasks/; each exposes `task() -> Task`.
TASK_MODULES: tuple[str, ...] = (
    "matmul",
    "matvec",
    "transpose",
    "softmax",
    "layernorm",
    "rmsnorm",
    "stencil",
    "reduction",
    "scan",
    "histogram",
    "elementwise",
    "spmv",
)


class UnknownTaskError(KeyError):
    """No task by that name for that backend; the message lists the known names."""

    def __init__(self, name: str, backend: str, known: list[str]) -> None:
        self.name, self.backend, self.known = name, backend, known
        super().__init__(name)

    def __str__(self) -> str:
        return f"unknown task {self.name!r} for backend {self.backend!r}; known: {', '.join(self.known)}"


@cache
def _load_all() -> tuple[Task, ...]:
    return tuple(
        importlib.import_module(f"kernelgraph.agent.tasks.{module}").task() for module in TASK_MODULES
    )


def all_tasks(backend: str = "c") -> list[Task]:
    """Every task that can render source for `backend`, in registry order."""
    if backend == "triton":  # the Triton variants live in their own package (agent/tasks/triton)
        from kernelgraph.agent.tasks.triton import triton_tasks

        return triton_tasks()
    return [t for t in _load_all() if backend in t.render]


def get_task(name: str, backend: str = "c") -> Task:
    """The task called `name`; raises `UnknownTaskError` (a KeyError) listing the known names."""
    tasks = all_tasks(backend)
    for t in tasks:
        if t.name == name:
            return t
    raise UnknownTaskError(name, backend, [t.name for t in tasks])


__all__ = ["Task", "UnknownTaskError", "all_tasks", "get_task"]
