"""The SiLU chain y = silu(1.5 x + 0.25) + x over a float32 vector, registered as task "elementwise".

Only the Triton backend renders it (agent/tasks/triton/elementwise.py: three kernels through memory,
or one fused kernel); the C backend's elementwise task is `elementwise_chain` (elementwise.py). The
name "elementwise" is kept because recorded Triton experience refers to it.
"""

from __future__ import annotations

import numpy as np

from kernelgraph.agent.tasks._common import (
    EDGE_SEED,
    f32,
    rng,
)
from kernelgraph.agent.tasks._define import define_task, per_element, shaped_like
from kernelgraph.agent.tasks.base import Arrays, LibraryCall, Shape, Task

FULL, SMALL = 1 << 26, 5_003


def inputs_at(seed: int, shape: Shape) -> Arrays:
    return {"x": f32(rng(seed).standard_normal(shape) * 4.0)}


def _silu_chain(x: np.ndarray) -> np.ndarray:
    t = 1.5 * x + 0.25
    return t / (1.0 + np.exp(-t)) + x


def reference(inputs: Arrays) -> Arrays:
    return {"y": _silu_chain(inputs["x"].astype(np.float64)).astype(np.float32)}


def edge_inputs(inputs: Arrays) -> Arrays:
    """x around +-80: exp(-t) overflows for the negative half, so t / (1 + exp(-t)) must give -0."""
    g = rng(EDGE_SEED)
    shape = inputs["x"].shape
    return {"x": f32(g.choice([-80.0, 80.0], shape) + g.standard_normal(shape))}


LIBRARY = LibraryCall(
    numpy=lambda x: {"y": _silu_chain(x["x"])},
    numpy_call="t = 1.5 * x + 0.25; t / (1 + np.exp(-t)) + x",
    torch=lambda torch, x: {"y": torch.nn.functional.silu(1.5 * x["x"] + 0.25) + x["x"]},
    torch_call="torch.nn.functional.silu(1.5 * x + 0.25) + x",
)


def task() -> Task:
    return define_task(
        name="elementwise",
        family="elementwise",
        patterns=("streaming",),
        description="A chain of elementwise ops on a float32 vector: y = silu(1.5 x + 0.25) + x.",
        inputs_at=inputs_at,
        small=(SMALL,),
        full=(FULL,),
        output_shapes=shaped_like("x", "y"),
        reference=reference,
        edge_inputs=edge_inputs,
        library=LIBRARY,
        flops=per_element("x", 7.0),
        bytes_moved=per_element("x", 8.0),
        baseline_config={},
        transforms=(),
        render_c=None,  # no C renderer: the Triton backend registers the only one
    )
