"""RMSNorm over rows: one sum-of-squares reduction, then a scale pass."""

from __future__ import annotations

import numpy as np

from agent.tasks._common import C_PRELUDE, f32, omp_for, rng, set_knob, simd, turn_on
from agent.tasks.base import Arrays, Config, Task
from agent.transforms import Transform

FULL, SMALL = (2048, 2048), (31, 66)
EPS = 1e-6


def make_inputs(seed: int, small: bool) -> Arrays:
    r, c = SMALL if small else FULL
    g = rng(seed)
    return {"x": f32(g.standard_normal((r, c))), "w": f32(g.uniform(0.5, 1.5, c))}


def reference(inputs: Arrays) -> Arrays:
    x = inputs["x"].astype("f8")
    rms = np.sqrt((x * x).mean(axis=1, keepdims=True) + EPS)
    return {"y": (x / rms * inputs["w"]).astype("f4")}


def render_c(config: Config) -> str:
    if int(config["acc"]) == 4:
        ssq = (
            "        float q0 = 0.0f, q1 = 0.0f, q2 = 0.0f, q3 = 0.0f;\n        const int c4 = c - c % 4;\n"
            + simd(config, "+:q0,q1,q2,q3")
            + "        for (int j = 0; j < c4; j += 4) {\n"
            "            q0 += xr[j] * xr[j]; q1 += xr[j + 1] * xr[j + 1];\n"
            "            q2 += xr[j + 2] * xr[j + 2]; q3 += xr[j + 3] * xr[j + 3];\n        }\n"
            "        float q = (q0 + q1) + (q2 + q3);\n"
            "        for (int j = c4; j < c; j++) q += xr[j] * xr[j];\n"
        )
    else:
        ssq = (
            "        float q = 0.0f;\n"
            + simd(config, "+:q")
            + "        for (int j = 0; j < c; j++) q += xr[j] * xr[j];\n"
        )
    if config["recip"]:
        scale = (
            f"        float inv = 1.0f / sqrtf(q / c + {EPS}f);\n"
            + simd(config)
            + "        for (int j = 0; j < c; j++) yr[j] = xr[j] * inv * w[j];\n"
        )
    else:
        scale = (
            f"        float rms = sqrtf(q / c + {EPS}f);\n"
            + simd(config)
            + "        for (int j = 0; j < c; j++) yr[j] = xr[j] / rms * w[j];\n"
        )
    return (
        C_PRELUDE + f"/* rmsnorm {dict(config)} */\n"
        "void kernel(const float* restrict x, const float* restrict w, float* restrict y, int r, int c) {\n"
        + omp_for(config)
        + "    for (int i = 0; i < r; i++) {\n"
        "        const float* xr = x + (long)i * c;\n        float* yr = y + (long)i * c;\n"
        + ssq
        + scale
        + "    }\n}\n"
    )


def task() -> Task:
    return Task(
        name="rmsnorm",
        family="row-reduction",
        patterns=("row-reduction", "row-major-stream", "broadcast-vector"),
        description="RMSNorm of a 2048x2048 fp32 matrix with a weight vector (small 31x66).",
        dtype="float32",
        make_inputs=make_inputs,
        output_shapes=lambda x: {"y": x["x"].shape},
        reference=reference,
        flops=lambda x: 4.0 * x["x"].size,
        bytes_moved=lambda x: 8.0 * x["x"].size,
        baseline_config={"acc": 1, "simd": False, "recip": False, "parallel": False},
        transforms=(
            set_knob(Transform.SPLIT_REDUCTION, "acc", (4, 1)),
            turn_on(Transform.VECTORIZE, "simd"),
            turn_on(Transform.STRENGTH_REDUCE, "recip"),
            turn_on(Transform.PARALLELIZE, "parallel"),
        ),
        render={"c": render_c},
        sizes=lambda x: {"r": x["x"].shape[0], "c": x["x"].shape[1]},
    )
