"""RMSNorm over rows: one sum-of-squares reduction, then a scale pass."""

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
    split_sum,
    turn_on,
    vloop,
)
from kernelgraph.agent.tasks._define import define_task, dims, per_element, shaped_like
from kernelgraph.agent.tasks.base import Arrays, Config, Instance, LibraryCall, Shape, Task
from kernelgraph.agent.transforms import Transform

FULL, SMALL = (2048, 2048), (31, 66)
EPS = 1e-6


def inputs_at(seed: int, shape: Shape) -> Arrays:
    r, c = shape
    g = rng(seed)
    return {"x": f32(g.standard_normal((r, c))), "w": f32(g.uniform(0.5, 1.5, c))}


def reference(inputs: Arrays) -> Arrays:
    x = inputs["x"].astype("f8")
    rms = np.sqrt((x * x).mean(axis=1, keepdims=True) + EPS)
    return {"y": (x / rms * inputs["w"]).astype("f4")}


def render_c(config: Config) -> str:
    acc = int(config["acc"])
    if acc > 1:
        ssq = split_sum(
            config, "q", acc, lambda j: f"xr[{j}] * xr[{j}]", index="j", lo="0", hi="c", end="const int cm"
        )
    else:
        ssq = "        float q = 0.0f;\n" + vloop(
            config, "j", "0", "c", "q += xr[j] * xr[j];", reduction="+:q", pad="        "
        )
    recip = config["recip"]
    if recip == "reciprocal":
        head, value = f"        float inv = 1.0f / sqrtf(q / c + {EPS}f);\n", "xr[j] * inv * w[j]"
    elif recip == "hoist":
        head, value = f"        float rms = sqrtf(q / c + {EPS}f);\n", "xr[j] / rms * w[j]"
    else:  # naive: the square root and the divide in the inner loop
        head, value = "", f"xr[j] / sqrtf(q / c + {EPS}f) * w[j]"
    scale = head + vloop(config, "j", "0", "c", f"yr[j] = {value};", pad="        ")
    return c_source(
        "rmsnorm",
        config,
        "const float* restrict x, const float* restrict w, float* restrict y, int r, int c",
        row_loop(config, ssq + scale),
    )


INSTANCES = (
    Instance("16x512", (16, 512), "L1"),
    Instance("128x2048", (128, 2048), "L2"),
    Instance("512x2048", (512, 2048), "LLC"),
    Instance("32x32768", (32, 32768), "LLC"),
)


def edge_inputs(inputs: Arrays) -> Arrays:
    """Rows alternately of magnitude 1e4 (squares near 1e8) and 1e-4 (mean square far below EPS)."""
    x = inputs["x"]
    scale = np.where(np.arange(x.shape[0]) % 2 == 0, 1e4, 1e-4)[:, None]
    return {**inputs, "x": f32(rng(EDGE_SEED).standard_normal(x.shape) * scale)}


LIBRARY = LibraryCall(
    numpy=lambda x: {
        "y": x["x"] / np.sqrt((x["x"] * x["x"]).mean(axis=1, keepdims=True) + np.float32(EPS)) * x["w"]
    },
    numpy_call="x / np.sqrt((x * x).mean(1, keepdims=True) + eps) * w",
    torch=lambda torch, x: {"y": torch.nn.functional.rms_norm(x["x"], (x["x"].shape[1],), x["w"], EPS)},
    torch_call="torch.nn.functional.rms_norm(x, (c,), w, eps)",
)


def task() -> Task:
    return define_task(
        name="rmsnorm",
        family="row-reduction",
        patterns=("row-reduction", "row-major-stream", "broadcast-vector"),
        description="RMSNorm of a 2048x2048 fp32 matrix with a weight vector (small 31x66).",
        inputs_at=inputs_at,
        small=SMALL,
        full=FULL,
        output_shapes=shaped_like("x", "y"),
        reference=reference,
        edge_inputs=edge_inputs,
        library=LIBRARY,
        flops=per_element("x", 4.0),
        bytes_moved=per_element("x", 8.0),
        sizes=dims("x", "r", "c"),
        baseline_config={
            "acc": 1,
            "simd": False,
            "unroll": 1,
            "recip": "none",
            "parallel": False,
            "schedule": "static",
        },
        transforms=(
            set_knob(Transform.SPLIT_REDUCTION, "acc", (4, 8, 1)),
            turn_on(Transform.VECTORIZE, "simd"),
            set_knob(Transform.UNROLL, "unroll", (4, 1)),
            set_knob(Transform.STRENGTH_REDUCE, "recip", ("reciprocal", "hoist")),
            parallelize(),
            schedule(),
        ),
        render_c=render_c,
        instances=INSTANCES,
    )
