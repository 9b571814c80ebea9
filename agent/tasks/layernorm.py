"""LayerNorm over rows: mean and variance reductions, then an affine normalize pass."""

from __future__ import annotations

import numpy as np

from kernelgraph.agent.tasks._common import (
    EDGE_SEED,
    c_source,
    f32,
    parallelize,
    rng,
    row_loop,
    schedule,
    set_knob,
    turn_on,
    vloop,
)
from kernelgraph.agent.tasks._define import define_task, dims, per_element, shaped_like
from kernelgraph.agent.tasks.base import Arrays, Config, Instance, LibraryCall, Shape, Task
from kernelgraph.agent.transforms import Transform

FULL, SMALL = (2048, 1024), (33, 70)
EPS = 1e-5


def inputs_at(seed: int, shape: Shape) -> Arrays:
    r, c = shape
    g = rng(seed)
    return {
        "x": f32(g.standard_normal((r, c))),
        "gamma": f32(g.uniform(0.5, 1.5, c)),
        "beta": f32(g.uniform(-0.5, 0.5, c)),
    }


def reference(inputs: Arrays) -> Arrays:
    x = inputs["x"].astype("f8")
    mean = x.mean(axis=1, keepdims=True)
    var = ((x - mean) ** 2).mean(axis=1, keepdims=True)
    y = (x - mean) / np.sqrt(var + EPS) * inputs["gamma"] + inputs["beta"]
    return {"y": y.astype("f4")}


def render_c(config: Config) -> str:
    if config["fuse"]:
        stats = (
            "        float s = 0.0f, q = 0.0f;\n"
            + vloop(
                config,
                "j",
                "0",
                "c",
                "{ s += xr[j]; q += xr[j] * xr[j]; }",
                reduction="+:s,q",
                pad="        ",
            )
            + "        float mean = s / c;\n        float var = q / c - mean * mean;\n"
        )
    else:
        stats = (
            "        float s = 0.0f;\n"
            + vloop(config, "j", "0", "c", "s += xr[j];", reduction="+:s", pad="        ")
            + "        float mean = s / c, q = 0.0f;\n"
            + vloop(
                config,
                "j",
                "0",
                "c",
                "{ float d = xr[j] - mean; q += d * d; }",
                reduction="+:q",
                pad="        ",
            )
            + "        float var = q / c;\n"
        )
    if config["recip"]:
        head = f"        float rstd = 1.0f / sqrtf(var + {EPS}f);\n"
        value = "(xr[j] - mean) * rstd * gamma[j] + beta[j]"
    else:  # naive: a square root and a divide per element
        head, value = "", f"(xr[j] - mean) / sqrtf(var + {EPS}f) * gamma[j] + beta[j]"
    return c_source(
        "layernorm",
        config,
        "const float* restrict x, const float* restrict gamma, const float* restrict beta,\n"
        "            float* restrict y, int r, int c",
        row_loop(config, stats + head + vloop(config, "j", "0", "c", f"yr[j] = {value};", pad="        ")),
    )


# The study's development set (docs/results.md): tuned on, never reported.
INSTANCES = (
    Instance("16x512", (16, 512), "L1"),
    Instance("256x1024", (256, 1024), "L2"),
    Instance("2048x1024", (2048, 1024), "LLC"),
)


def edge_inputs(inputs: Arrays) -> Arrays:
    """Even rows constant (zero variance: only EPS keeps the divide finite; the values are dyadic, so
    any summation order gets the mean exactly), odd rows around a mean of 3."""
    x = inputs["x"]
    g = rng(EDGE_SEED)
    rows = np.arange(x.shape[0])[:, None]
    constant = np.broadcast_to(g.integers(-8, 9, (x.shape[0], 1)) / 4.0, x.shape)
    return {**inputs, "x": f32(np.where(rows % 2 == 0, constant, 3.0 + g.standard_normal(x.shape)))}


def _numpy_layernorm(inputs: Arrays) -> Arrays:
    x = inputs["x"]
    mean = x.mean(axis=1, keepdims=True)
    var = x.var(axis=1, keepdims=True)
    return {"y": (x - mean) / np.sqrt(var + np.float32(EPS)) * inputs["gamma"] + inputs["beta"]}


LIBRARY = LibraryCall(
    numpy=_numpy_layernorm,
    numpy_call="(x - x.mean(1, keepdims=True)) / np.sqrt(x.var(1, keepdims=True) + eps) * gamma + beta",
    torch=lambda torch, x: {
        "y": torch.nn.functional.layer_norm(x["x"], (x["x"].shape[1],), x["gamma"], x["beta"], EPS)
    },
    torch_call="torch.nn.functional.layer_norm(x, (c,), gamma, beta, eps)",
)


def task() -> Task:
    return define_task(
        name="layernorm",
        family="row-reduction",
        patterns=("row-reduction", "row-major-stream", "broadcast-vector", "multi-pass"),
        description="LayerNorm of a 2048x1024 fp32 matrix with gamma and beta (small 33x70).",
        inputs_at=inputs_at,
        small=SMALL,
        full=FULL,
        output_shapes=shaped_like("x", "y"),
        reference=reference,
        edge_inputs=edge_inputs,
        library=LIBRARY,
        flops=per_element("x", 8.0),
        bytes_moved=per_element("x", 8.0),
        sizes=dims("x", "r", "c"),
        baseline_config={
            "fuse": False,
            "simd": False,
            "unroll": 1,
            "recip": False,
            "parallel": False,
            "schedule": "static",
        },
        transforms=(
            turn_on(Transform.FUSE, "fuse"),
            turn_on(Transform.VECTORIZE, "simd"),
            set_knob(Transform.UNROLL, "unroll", (4, 8, 1)),
            turn_on(Transform.STRENGTH_REDUCE, "recip"),
            parallelize(),
            schedule(),
        ),
        render_c=render_c,
        instances=INSTANCES,
    )
