"""Full sum reduction of a long fp32 vector (accumulated in double so every variant is exact enough)."""

from __future__ import annotations

import numpy as np

from agent.tasks._common import C_PRELUDE, f32, par_simd, rng, set_knob, turn_on
from agent.tasks.base import Arrays, Config, Task
from agent.transforms import Transform

FULL, SMALL = 8 * 1024 * 1024, 100_003


def make_inputs(seed: int, small: bool) -> Arrays:
    return {"x": f32(rng(seed).uniform(-1, 1, SMALL if small else FULL))}


def reference(inputs: Arrays) -> Arrays:
    return {"out": np.array([inputs["x"].astype("f8").sum()], dtype="f4")}


def render_c(config: Config) -> str:
    if int(config["acc"]) == 4:
        body = (
            "    double s0 = 0.0, s1 = 0.0, s2 = 0.0, s3 = 0.0;\n    long m = n - n % 4;\n"
            + par_simd(config, "+:s0,s1,s2,s3")
            + "    for (long i = 0; i < m; i += 4) { s0 += x[i]; s1 += x[i + 1]; s2 += x[i + 2]; s3 += x[i + 3]; }\n"
            "    double s = (s0 + s1) + (s2 + s3);\n    for (long i = m; i < n; i++) s += x[i];\n"
        )
    else:
        body = (
            "    double s = 0.0;\n"
            + par_simd(config, "+:s")
            + "    for (long i = 0; i < n; i++) s += x[i];\n"
        )
    return (
        C_PRELUDE + f"/* reduction {dict(config)} */\n"
        "void kernel(const float* restrict x, float* restrict out, int n) {\n"
        + body
        + "    out[0] = (float)s;\n}\n"
    )


def task() -> Task:
    return Task(
        name="reduction",
        family="reduction",
        patterns=("full-reduction", "contiguous-stream"),
        description="Sum of 8M fp32 values into one scalar (small 100003).",
        dtype="float32",
        make_inputs=make_inputs,
        output_shapes=lambda x: {"out": (1,)},
        reference=reference,
        flops=lambda x: float(x["x"].size),
        bytes_moved=lambda x: 4.0 * x["x"].size,
        baseline_config={"acc": 1, "simd": False, "parallel": False},
        transforms=(
            set_knob(Transform.SPLIT_REDUCTION, "acc", (4, 1)),
            turn_on(Transform.VECTORIZE, "simd"),
            turn_on(Transform.PARALLELIZE, "parallel"),
        ),
        render={"c": render_c},
        sizes=lambda x: {"n": x["x"].size},
    )
