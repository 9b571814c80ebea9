"""A chain of four elementwise ops, y = (relu(1.5 x + z) * x) - 0.5 z: fusion removes passes."""

from __future__ import annotations

import numpy as np

from agent.tasks._common import C_PRELUDE, f32, par_simd, rng, turn_on
from agent.tasks.base import Arrays, Config, Task
from agent.transforms import Transform

FULL, SMALL = 8 * 1024 * 1024, 30_011


def make_inputs(seed: int, small: bool) -> Arrays:
    g = rng(seed)
    n = SMALL if small else FULL
    return {"x": f32(g.standard_normal(n)), "z": f32(g.standard_normal(n))}


def reference(inputs: Arrays) -> Arrays:
    x, z = inputs["x"].astype("f8"), inputs["z"].astype("f8")
    return {"y": (np.maximum(1.5 * x + z, 0.0) * x - 0.5 * z).astype("f4")}


def render_c(config: Config) -> str:
    def loop(stmt: str) -> str:
        return par_simd(config) + f"    for (long i = 0; i < n; i++) {stmt}\n"

    if config["fuse"]:
        body = loop(
            "{ float t = 1.5f * x[i] + z[i]; t = t > 0.0f ? t : 0.0f; y[i] = t * x[i] - 0.5f * z[i]; }"
        )
    else:
        body = (
            loop("y[i] = 1.5f * x[i] + z[i];")
            + loop("y[i] = y[i] > 0.0f ? y[i] : 0.0f;")
            + loop("y[i] = y[i] * x[i];")
            + loop("y[i] = y[i] - 0.5f * z[i];")
        )
    return (
        C_PRELUDE + f"/* elementwise {dict(config)} */\n"
        "void kernel(const float* restrict x, const float* restrict z, float* restrict y, int n) {\n"
        + body
        + "}\n"
    )


def task() -> Task:
    return Task(
        name="elementwise_chain",
        family="elementwise",
        patterns=("contiguous-stream", "elementwise", "multi-pass"),
        description="y = relu(1.5x + z) * x - 0.5z over 8M fp32 values, as four passes or fused (small 30011).",
        dtype="float32",
        make_inputs=make_inputs,
        output_shapes=lambda x: {"y": x["x"].shape},
        reference=reference,
        flops=lambda x: 6.0 * x["x"].size,
        bytes_moved=lambda x: 12.0 * x["x"].size,
        baseline_config={"fuse": False, "simd": False, "parallel": False},
        transforms=(
            turn_on(Transform.FUSE, "fuse"),
            turn_on(Transform.VECTORIZE, "simd"),
            turn_on(Transform.PARALLELIZE, "parallel"),
        ),
        render={"c": render_c},
        sizes=lambda x: {"n": x["x"].size},
    )
