"""Row softmax: max, exp-sum and scale passes per row; fusing them trades traffic for extra expf."""

from __future__ import annotations

import numpy as np

from agent.tasks._common import C_PRELUDE, f32, omp_for, rng, simd, turn_on
from agent.tasks.base import Arrays, Config, Task
from agent.transforms import Transform

FULL, SMALL = (1024, 1024), (37, 50)


def make_inputs(seed: int, small: bool) -> Arrays:
    r, c = SMALL if small else FULL
    return {"x": f32(rng(seed).standard_normal((r, c)) * 3.0)}


def reference(inputs: Arrays) -> Arrays:
    x = inputs["x"].astype("f8")
    e = np.exp(x - x.max(axis=1, keepdims=True))
    return {"y": (e / e.sum(axis=1, keepdims=True)).astype("f4")}


def render_c(config: Config) -> str:
    scale = (
        "        float inv = 1.0f / s;\n"
        + simd(config)
        + "        for (int j = 0; j < c; j++) yr[j] *= inv;\n"
        if config["recip"]
        else simd(config) + "        for (int j = 0; j < c; j++) yr[j] /= s;\n"
    )
    if config["fuse"]:
        # Online softmax: one pass for max and sum (rescaling the sum when the max grows),
        # then a second pass that recomputes the exponentials.
        row = (
            "        float m = xr[0], s = 0.0f;\n"
            "        for (int j = 0; j < c; j++) {\n"
            "            if (xr[j] > m) { s = s * expf(m - xr[j]) + 1.0f; m = xr[j]; }\n"
            "            else s += expf(xr[j] - m);\n        }\n"
            "        for (int j = 0; j < c; j++) yr[j] = expf(xr[j] - m);\n" + scale
        )
    else:
        row = (
            "        float m = xr[0];\n"
            + simd(config, "max:m")
            + "        for (int j = 0; j < c; j++) m = xr[j] > m ? xr[j] : m;\n"
            "        float s = 0.0f;\n"
            "        for (int j = 0; j < c; j++) { float e = expf(xr[j] - m); yr[j] = e; s += e; }\n" + scale
        )
    return (
        C_PRELUDE + f"/* softmax {dict(config)} */\n"
        "void kernel(const float* restrict x, float* restrict y, int r, int c) {\n"
        + omp_for(config)
        + "    for (int i = 0; i < r; i++) {\n"
        "        const float* xr = x + (long)i * c;\n        float* yr = y + (long)i * c;\n"
        + row
        + "    }\n}\n"
    )


def task() -> Task:
    return Task(
        name="softmax",
        family="row-reduction",
        patterns=("row-reduction", "row-major-stream", "transcendental", "multi-pass"),
        description="Row-wise softmax of a 1024x1024 fp32 matrix (small 37x50).",
        dtype="float32",
        make_inputs=make_inputs,
        output_shapes=lambda x: {"y": x["x"].shape},
        reference=reference,
        flops=lambda x: 5.0 * x["x"].size,
        bytes_moved=lambda x: 8.0 * x["x"].size,
        baseline_config={"fuse": False, "simd": False, "recip": False, "parallel": False},
        transforms=(
            turn_on(Transform.FUSE, "fuse"),
            turn_on(Transform.VECTORIZE, "simd"),
            turn_on(Transform.STRENGTH_REDUCE, "recip"),
            turn_on(Transform.PARALLELIZE, "parallel"),
        ),
        render={"c": render_c},
        sizes=lambda x: {"r": x["x"].shape[0], "c": x["x"].shape[1]},
    )
