"""Inclusive prefix sum: a serial dependency chain that needs a two-pass algorithm to parallelize."""

from __future__ import annotations

import numpy as np

from agent.tasks._common import C_PRELUDE, f32, rng, set_knob, turn_on, unroll
from agent.tasks.base import Arrays, Config, Task
from agent.transforms import Transform

FULL, SMALL = 8 * 1024 * 1024, 50_001


def make_inputs(seed: int, small: bool) -> Arrays:
    return {"x": f32(rng(seed).uniform(-1, 1, SMALL if small else FULL))}


def reference(inputs: Arrays) -> Arrays:
    return {"y": np.cumsum(inputs["x"].astype("f8")).astype("f4")}


def render_c(config: Config) -> str:
    if not config["parallel"]:
        body = (
            "    double s = 0.0;\n"
            + unroll(config)
            + "    for (long i = 0; i < n; i++) { s += x[i]; y[i] = (float)s; }\n"
        )
    else:
        block = int(config["block"]) or 0
        step = f"{block}L" if block else "(long)n"
        # Two passes per block: each thread scans its slice, then adds the sums of the slices before it.
        body = (
            "    double carry = 0.0;\n    double sums[257];\n"
            f"    for (long start = 0; start < n; start += {step}) {{\n"
            f"        long len = n - start < {step} ? n - start : {step};\n"
            "        #pragma omp parallel\n        {\n"
            "            int t = omp_get_thread_num(), T = omp_get_num_threads();\n"
            "            if (T > 256) T = 256;\n"
            "            long lo = start + len * t / T, hi = start + len * (t + 1) / T;\n"
            "            double s = 0.0;\n"
            + unroll(config)
            + "            for (long i = lo; i < hi; i++) { s += x[i]; y[i] = (float)s; }\n"
            "            sums[t] = s;\n            #pragma omp barrier\n"
            "            double off = carry;\n            for (int k = 0; k < t; k++) off += sums[k];\n"
            "            float foff = (float)off;\n"
            "            if (t > 0 || carry != 0.0) for (long i = lo; i < hi; i++) y[i] += foff;\n"
            "            #pragma omp barrier\n"
            "            #pragma omp single\n            { for (int k = 0; k < T; k++) carry += sums[k]; }\n"
            "        }\n    }\n"
        )
    return (
        C_PRELUDE
        + f"/* scan {dict(config)} */\nvoid kernel(const float* restrict x, float* restrict y, int n) {{\n{body}}}\n"
    )


def task() -> Task:
    return Task(
        name="prefix_scan",
        family="scan",
        patterns=("scan", "contiguous-stream", "loop-carried-dependency"),
        description="Inclusive prefix sum of 8M fp32 values (small 50001).",
        dtype="float32",
        make_inputs=make_inputs,
        output_shapes=lambda x: {"y": x["x"].shape},
        reference=reference,
        flops=lambda x: float(x["x"].size),
        bytes_moved=lambda x: 8.0 * x["x"].size,
        baseline_config={"parallel": False, "block": 0, "unroll": 1},
        transforms=(
            turn_on(Transform.PARALLELIZE, "parallel"),
            set_knob(Transform.BLOCK_FOR_CACHE, "block", (65536, 0), requires=lambda c: bool(c["parallel"])),
            set_knob(Transform.UNROLL, "unroll", (4, 1)),
        ),
        render={"c": render_c},
        sizes=lambda x: {"n": x["x"].size},
    )
