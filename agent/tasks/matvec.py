"""Matrix-vector product y = A @ x: a streaming row reduction, latency-bound until vectorized."""

from __future__ import annotations

from agent.tasks._common import C_PRELUDE, f32, omp_for, par_simd, rng, set_knob, simd, turn_on
from agent.tasks.base import Arrays, Config, Task
from agent.transforms import Transform

FULL, SMALL = (4096, 2048), (67, 45)


def make_inputs(seed: int, small: bool) -> Arrays:
    m, n = SMALL if small else FULL
    g = rng(seed)
    return {"a": f32(g.uniform(-1, 1, (m, n))), "x": f32(g.uniform(-1, 1, n))}


def reference(inputs: Arrays) -> Arrays:
    return {"y": (inputs["a"].astype("f8") @ inputs["x"].astype("f8")).astype("f4")}


def render_c(config: Config) -> str:
    head = (
        C_PRELUDE + f"/* matvec {dict(config)} */\n"
        "void kernel(const float* restrict a, const float* restrict x, float* restrict y, int m, int n) {\n"
    )
    if config["order"] == "col":
        # Column sweep: y += A[:, j] * x[j]; strided through A, parallel forks once per column.
        return (
            head + "    for (int i = 0; i < m; i++) y[i] = 0.0f;\n"
            "    for (int j = 0; j < n; j++) {\n        float xj = x[j];\n"
            + par_simd(config)
            + "        for (int i = 0; i < m; i++) y[i] += a[(long)i * n + j] * xj;\n    }\n}\n"
        )
    if int(config["acc"]) == 4:
        dot = (
            "        float s0 = 0.0f, s1 = 0.0f, s2 = 0.0f, s3 = 0.0f;\n        const int n4 = n - n % 4;\n"
            + simd(config, "+:s0,s1,s2,s3")
            + "        for (int k = 0; k < n4; k += 4) {\n"
            "            s0 += row[k] * x[k]; s1 += row[k + 1] * x[k + 1];\n"
            "            s2 += row[k + 2] * x[k + 2]; s3 += row[k + 3] * x[k + 3];\n        }\n"
            "        float s = (s0 + s1) + (s2 + s3);\n"
            "        for (int k = n4; k < n; k++) s += row[k] * x[k];\n"
        )
    else:
        dot = (
            "        float s = 0.0f;\n"
            + simd(config, "+:s")
            + "        for (int k = 0; k < n; k++) s += row[k] * x[k];\n"
        )
    return (
        head
        + omp_for(config)
        + "    for (int i = 0; i < m; i++) {\n        const float* row = a + (long)i * n;\n"
        + dot
        + "        y[i] = s;\n    }\n}\n"
    )


def task() -> Task:
    return Task(
        name="matvec",
        family="dense-matvec",
        patterns=("row-major-stream", "row-reduction", "broadcast-vector"),
        description="y = A @ x, A is 4096x2048 fp32 (small 67x45).",
        dtype="float32",
        make_inputs=make_inputs,
        output_shapes=lambda x: {"y": (x["a"].shape[0],)},
        reference=reference,
        flops=lambda x: 2.0 * x["a"].size,
        bytes_moved=lambda x: 4.0 * (x["a"].size + x["x"].size + x["a"].shape[0]),
        baseline_config={"order": "row", "acc": 1, "simd": False, "parallel": False},
        transforms=(
            set_knob(Transform.INTERCHANGE, "order", ("col", "row")),
            set_knob(Transform.SPLIT_REDUCTION, "acc", (4, 1), requires=lambda c: c["order"] == "row"),
            turn_on(Transform.VECTORIZE, "simd"),
            turn_on(Transform.PARALLELIZE, "parallel"),
        ),
        render={"c": render_c},
        sizes=lambda x: {"m": x["a"].shape[0], "n": x["a"].shape[1]},
    )
