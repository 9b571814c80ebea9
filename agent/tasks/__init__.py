"""The task registry: every kernel task KernelGraph knows, looked up by name and backend.

Each task is defined once, in one module of this package (inputs, reference, roofline counts and
its C renderer, if any). A backend other than C registers renderers in its own package (e.g.
agent/tasks/triton/): `get_task(name, backend)` composes the one definition with that backend's
renderer, so a backend can never carry a second reference or its own inputs. Task modules are
imported on first use, not at package import.
"""

from __future__ import annotations

import importlib
from functools import cache

from kernelgraph.agent.tasks.base import NoRendererError, Renderer, Task, UnknownTaskError

# One module per task definition under agent/tasks/; each exposes `task() -> Task`.
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
    "silu_chain",
)

# Backends whose renderers live in their own package; each package exposes `renderers()`.
RENDERER_PACKAGES: dict[str, str] = {"triton": "kernelgraph.agent.tasks.triton"}


@cache
def definitions() -> tuple[Task, ...]:
    """Every task definition, in registry order, each with its C renderer (or none)."""
    return tuple(
        importlib.import_module(f"kernelgraph.agent.tasks.{module}").task() for module in TASK_MODULES
    )


def definition(name: str) -> Task:
    """The one definition of task `name`; a KeyError (UnknownTaskError) when there is none."""
    for t in definitions():
        if t.name == name:
            return t
    raise UnknownTaskError(name, "any", [t.name for t in definitions()])


@cache
def _backend_tasks(backend: str) -> tuple[Task, ...]:
    if backend not in RENDERER_PACKAGES:  # the C renderers are part of the definitions
        return tuple(t for t in definitions() if backend in t.render)
    package = importlib.import_module(RENDERER_PACKAGES[backend])
    renderers: tuple[Renderer, ...] = package.renderers()
    for r in renderers:
        if r.backend != backend:
            raise ValueError(
                f"{RENDERER_PACKAGES[backend]} registers a {r.backend!r} renderer for {r.task!r}"
            )
    # A renderer whose task has no definition is a registry bug: `definition` raises, loudly.
    return tuple(definition(r.task).with_renderer(r) for r in renderers)


def all_tasks(backend: str = "c") -> list[Task]:
    """Every task that can render source for `backend`, in registry order."""
    return list(_backend_tasks(backend))


def get_task(name: str, backend: str = "c") -> Task:
    """The task called `name` as `backend` sees it.

    Raises `NoRendererError` when the task exists but `backend` has no renderer for it, else
    `UnknownTaskError`; both list the tasks `backend` does render, and the first is a kind of the second.
    """
    tasks = all_tasks(backend)
    for t in tasks:
        if t.name == name:
            return t
    if any(t.name == name for t in definitions()):
        raise NoRendererError(name, backend, [t.name for t in tasks])
    raise UnknownTaskError(name, backend, [t.name for t in tasks])


__all__ = [
    "NoRendererError",
    "Renderer",
    "Task",
    "UnknownTaskError",
    "all_tasks",
    "definition",
    "definitions",
    "get_task",
]
