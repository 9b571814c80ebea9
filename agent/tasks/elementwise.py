"""A chain of four elementwise ops, y = (relu(1.5 x + z) * x) - 0.5 z: fusion removes passes."""

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
    vloop,
)
from kernelgraph.agent.tasks._define import define_task, dims, per_element, shaped_like
from kernelgraph.agent.tasks.base import Arrays, Config, Instance, LibraryCall, Shape, Task
from kernelgraph.agent.transforms import Transform

FULL, SMALL = 8 * 1024 * 1024, 30_011


def inputs_at(seed: int, shape: Shape) -> Arrays:
    g = rng(seed)
    (n,) = shape
    return {"x": f32(g.standard_normal(n)), "z": f32(g.standard_normal(n))}


def _chain(x: np.ndarray, z: np.ndarray) -> np.ndarray:
    return np.maximum(1.5 * x + z, 0.0) * x - 0.5 * z


def reference(inputs: Arrays) -> Arrays:
    return {"y": _chain(inputs["x"].astype("f8"), inputs["z"].astype("f8")).astype("f4")}


def render_c(config: Config) -> str:
    block = int(config.get("block", 0))
    if config["fuse"]:
        passes = [
            ("t", "{ float t = 1.5f * x[i] + z[i]; t = t > 0.0f ? t : 0.0f; ", "t * x[i] - 0.5f * z[i]")
        ]
    else:
        passes = [
            ("", "", "1.5f * x[i] + z[i]"),
            ("", "", "y[i] > 0.0f ? y[i] : 0.0f"),
            ("", "", "y[i] * x[i]"),
            ("", "", "y[i] - 0.5f * z[i]"),
        ]

    def stmt(k: int) -> str:
        tmp, pre, value = passes[k]
        last = k == len(passes) - 1
        store = nt_store(config, "y[i]", value) if last else f"y[i] = {value};"
        return f"{pre}{store} }}" if tmp else store

    if block:
        # Cache blocking: all passes over one block before the next, so passes 2..4 re-read cache.
        inner = "".join(vloop(config, "i", "b", "e", stmt(k), pad="        ") for k in range(len(passes)))
        body = (
            omp_for(config) + f"    for (long b = 0; b < n; b += {block}) {{\n"
            f"        long e = b + {block} < n ? b + {block} : n;\n" + inner + "    }\n"
        )
    else:
        body = "".join(
            vloop(config, "i", "0", "n", stmt(k), parallel=bool(config["parallel"]))
            for k in range(len(passes))
        )
    return c_source(
        "elementwise",
        config,
        "const float* restrict x, const float* restrict z, float* restrict y, int n",
        body + nt_fence(config),
        head=prelude(config),
    )


INSTANCES = (
    Instance("4096", (4096,), "L1"),
    Instance("131072", (131072,), "L2"),
    Instance("1048576", (1048576,), "LLC"),
)


def edge_inputs(inputs: Arrays) -> Arrays:
    """On the kink of max(1.5x + z, 0): z = -1.5x exactly for half the elements (dyadic x)."""
    g = rng(EDGE_SEED)
    shape = inputs["x"].shape
    x = g.integers(-64, 65, shape) / 8.0
    z = np.where(g.random(shape) < 0.5, -1.5 * x, g.standard_normal(shape))
    return {"x": f32(x), "z": f32(z)}


LIBRARY = LibraryCall(
    numpy=lambda x: {"y": _chain(x["x"], x["z"])},
    numpy_call="np.maximum(1.5 * x + z, 0) * x - 0.5 * z",
    torch=lambda torch, x: {"y": torch.relu(1.5 * x["x"] + x["z"]) * x["x"] - 0.5 * x["z"]},
    torch_call="torch.relu(1.5 * x + z) * x - 0.5 * z",
)


def task() -> Task:
    return define_task(
        name="elementwise_chain",
        family="elementwise",
        patterns=("contiguous-stream", "elementwise", "multi-pass"),
        description="y = relu(1.5x + z) * x - 0.5z over 8M fp32 values, as four passes or fused (small 30011).",
        inputs_at=inputs_at,
        small=(SMALL,),
        full=(FULL,),
        output_shapes=shaped_like("x", "y"),
        reference=reference,
        edge_inputs=edge_inputs,
        library=LIBRARY,
        flops=per_element("x", 6.0),
        bytes_moved=per_element("x", 12.0),
        sizes=dims("x", "n"),
        baseline_config={
            "fuse": False,
            "block": 0,
            "simd": False,
            "unroll": 1,
            "stream": False,
            "parallel": False,
            "schedule": "static",
        },
        transforms=(
            turn_on(Transform.FUSE, "fuse"),
            set_knob(Transform.BLOCK_FOR_CACHE, "block", (4096, 65536, 0)),
            turn_on(Transform.VECTORIZE, "simd"),
            set_knob(Transform.UNROLL, "unroll", (4, 1)),
            turn_on(Transform.NONTEMPORAL, "stream"),
            parallelize(),
            schedule(),
        ),
        render_c=render_c,
        instances=INSTANCES,
    )
