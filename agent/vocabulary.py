"""The agent's shipped vocabulary: transforms with what each does, tasks with their families,
patterns and backends, a task's C signature, and the query's vocabulary a retrieval sends.
`GET /v1/vocabulary`, the MCP tool `vocabulary` and `kernelgraph tasks show` serve it; the service finds it through the `kernelgraph.vocabulary` entry
point (pyproject.toml), so it never imports the agent.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from kernelgraph.agent.tasks import RENDERER_PACKAGES, all_tasks
from kernelgraph.agent.tasks.base import Task
from kernelgraph.agent.transforms import Transform

BACKENDS = ("c", *RENDERER_PACKAGES)


def _ctype(dtype: np.dtype) -> str:
    return {"float32": "float", "int32": "int"}.get(str(dtype), "char")


def c_signature(task: Task) -> str:
    """The C prototype a kernel of `task` must export (docs/adding-a-task.md): inputs as `const T*`,
    outputs as `T*`, then the sizes as `int`, named as the task names them."""
    inputs = task.make_inputs(0, True)
    params = [f"const {_ctype(a.dtype)}* {name}" for name, a in inputs.items()]
    params += [f"{_ctype(np.dtype(task.output_dtype(name)))}* {name}" for name in task.output_shapes(inputs)]
    params += [f"int {name}" for name in task.sizes(inputs)]
    return f"void kernel({', '.join(params)});"


def query_vocabulary(task: Task) -> list[str]:
    """The query's vocabulary: the transforms a retrieval for a kernel of `task` can use, which it sends
    as RetrieveRequest.transforms so that evidence for any other transform takes no retrieval slot
    (docs/retrieval.md, "Within the query's vocabulary"). The product's proposers and the study send
    this one list."""
    return sorted({t.name for t in task.transforms})


def shipped_vocabulary() -> dict[str, Any]:
    """The names an agent chooses from: transforms, tasks, access patterns, families and backends."""
    tasks: dict[str, dict[str, Any]] = {}
    for backend in BACKENDS:
        for task in all_tasks(backend):
            entry = tasks.setdefault(task.name, {
                "name": task.name, "family": task.family, "patterns": list(task.patterns),
                "description": task.description, "backends": [], "transforms": {},
                "instances": [i.name for i in task.instances],
            })  # fmt: skip
            entry["backends"].append(backend)
            entry["transforms"][backend] = [t.name for t in task.transforms]
    return {
        "transforms": [{"name": t.value, "description": t.description} for t in Transform],
        "tasks": list(tasks.values()),
        "patterns": sorted({p for t in tasks.values() for p in t["patterns"]}),
        "families": sorted({t["family"] for t in tasks.values()}),
        "backends": list(BACKENDS),
    }
