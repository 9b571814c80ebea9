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
from kernelgraph.agent.tasks.base import Arrays, LibraryCall, Task

FULL, SMALL = 1 << 26, 5_003


def make_inputs(seed: int, small: bool) -> Arrays:
    return {"x": f32(rng(seed).standard_normal(SMALL if small else FULL) * 4.0)}


def reference(inputs: Arrays) -> Arrays:
    x = inputs["x"].astype(np.float64)
    t = 1.5 * x + 0.25
    return {"y": (t / (1.0 + np.exp(-t)) + x).astype(np.float32)}


def edge_inputs(inputs: Arrays) -> Arrays:
    """x around +-80: exp(-t) overflows for the negative half, so t / (1 + exp(-t)) must give -0."""
    g = rng(EDGE_SEED)
    shape = inputs["x"].shape
    return {"x": f32(g.choice([-80.0, 80.0], shape) + g.standard_normal(shape))}


LIBRARY = LibraryCall(
    numpy=lambda x: {"y": (1.5 * x["x"] + 0.25) / (1.0 + np.exp(-(1.5 * x["x"] + 0.25))) + x["x"]},
    numpy_call="t = 1.5 * x + 0.25; t / (1 + np.exp(-t)) + x",
    torch=lambda torch, x: {"y": torch.nn.functional.silu(1.5 * x["x"] + 0.25) + x["x"]},
    torch_call="torch.nn.functional.silu(1.5 * x + 0.25) + x",
)


def task() -> Task:
    return Task(
        edge_inputs=edge_inputs,
        name="elementwise",
        family="elementwise",
        patterns=("streaming",),
        description="A chain of elementwise ops on a float32 vector: y = silu(1.5 x + 0.25) + x.",
        dtype="float32",
        make_inputs=make_inputs,
        output_shapes=lambda x: {"y": x["x"].shape},
        reference=reference,
        library=LIBRARY,
        flops=lambda x: 7.0 * x["x"].size,
        bytes_moved=lambda x: 8.0 * x["x"].size,
        baseline_config={},
        transforms=(),
        render={},  # no C renderer: the Triton backend registers the only one
    )
