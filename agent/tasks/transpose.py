"""Out-of-place transpose B = A^T: pure data movement where one side is always strided."""

from __future__ import annotations

import numpy as np

from kernelgraph.agent.tasks._common import (
    EDGE_SEED,
    c_source,
    f32,
    nt_fence,
    nt_store,
    omp_for,
    parallelize,
    prelude,
    rng,
    schedule,
    set_knob,
    turn_on,
)
from kernelgraph.agent.tasks._define import define_task, dims, per_element
from kernelgraph.agent.tasks.base import Arrays, Config, Instance, LibraryCall, Shape, Task
from kernelgraph.agent.transforms import Transform

FULL, SMALL = (1536, 1536), (70, 45)


def inputs_at(seed: int, shape: Shape) -> Arrays:
    r, c = shape
    return {"a": f32(rng(seed).standard_normal((r, c)))}


def render_c(config: Config) -> str:
    tile = int(config["tile"])
    read_major = config["order"] == "read"
    outer, inner = ("i", "j") if read_major else ("j", "i")
    lim = {"i": "r", "j": "c"}
    body = nt_store(config, "b[(long)j * r + i]", "a[(long)i * c + j]") + "\n"
    if tile:
        loops = (
            omp_for(config)
            + f"    for (int {outer}{outer} = 0; {outer}{outer} < {lim[outer]}; {outer}{outer} += {tile})\n"
            f"    for (int {inner}{inner} = 0; {inner}{inner} < {lim[inner]}; {inner}{inner} += {tile})\n"
            f"    for (int {outer} = {outer}{outer}; {outer} < {outer}{outer} + {tile} && {outer} < {lim[outer]};"
            f" {outer}++)\n"
            f"    for (int {inner} = {inner}{inner}; {inner} < {inner}{inner} + {tile} && {inner} < {lim[inner]};"
            f" {inner}++)\n        " + body
        )
    else:
        loops = (
            omp_for(config) + f"    for (int {outer} = 0; {outer} < {lim[outer]}; {outer}++)\n"
            f"    for (int {inner} = 0; {inner} < {lim[inner]}; {inner}++)\n        " + body
        )
    return c_source(
        "transpose",
        config,
        "const float* restrict a, float* restrict b, int r, int c",
        loops + nt_fence(config),
        head=prelude(config),
    )


INSTANCES = (
    Instance("64x64", (64, 64), "L1"),
    Instance("384x384", (384, 384), "L2"),
    Instance("2048x512", (2048, 512), "LLC"),
)


def edge_inputs(inputs: Arrays) -> Arrays:
    """Denormals, negative zeros, the largest floats and ordinary values, each moved bit for bit."""
    g = rng(EDGE_SEED)
    shape = inputs["a"].shape
    pool = np.array([1e-45, -1e-40, -0.0, 3.4e38, -3.4e38, 1.0, -2.5], dtype=np.float32)
    return {"a": f32(pool[g.integers(0, pool.size, shape)])}


LIBRARY = LibraryCall(
    numpy=lambda x: {"b": np.ascontiguousarray(x["a"].T)},
    numpy_call="np.ascontiguousarray(a.T)",
    torch=lambda torch, x: {"b": x["a"].t().contiguous()},
    torch_call="a.t().contiguous()",
)


def task() -> Task:
    return define_task(
        name="transpose",
        family="transpose",
        patterns=("row-major-stream", "column-stride", "data-movement"),
        description="B = A^T for a 1536x1536 fp32 matrix (small 70x45).",
        inputs_at=inputs_at,
        small=SMALL,
        full=FULL,
        output_shapes=lambda x: {"b": x["a"].shape[::-1]},
        reference=lambda x: {"b": np.ascontiguousarray(x["a"].T)},
        edge_inputs=edge_inputs,
        library=LIBRARY,
        flops=lambda x: 0.0,
        bytes_moved=per_element("a", 8.0),
        sizes=dims("a", "r", "c"),
        baseline_config={
            "order": "read",
            "tile": 0,
            "stream": False,
            "parallel": False,
            "schedule": "static",
        },
        transforms=(
            set_knob(Transform.TILE, "tile", (32, 8, 16, 64, 128, 256, 0)),
            set_knob(Transform.INTERCHANGE, "order", ("write", "read")),
            turn_on(Transform.NONTEMPORAL, "stream"),
            parallelize(),
            schedule(),
        ),
        render_c=render_c,
        instances=INSTANCES,
    )
