"""256-bin histogram of values in [0, 1): scattered increments, contention when parallel."""

from __future__ import annotations

import numpy as np

from agent.tasks._common import C_PRELUDE, f32, rng, set_knob
from agent.tasks.base import Arrays, Config, Task
from agent.transforms import Transform

FULL, SMALL, BINS = 8 * 1024 * 1024, 40_009, 256


def make_inputs(seed: int, small: bool) -> Arrays:
    g = rng(seed)
    n = SMALL if small else FULL
    # Skewed values: a few hot bins make contention and store-forwarding chains real.
    return {"x": f32(np.clip(g.beta(2.0, 5.0, n), 0.0, 0.999999))}


def reference(inputs: Arrays) -> Arrays:
    bins = np.floor(inputs["x"] * np.float32(BINS)).astype(np.int64)
    return {"hist": np.bincount(bins, minlength=BINS).astype(np.int32)}


def render_c(config: Config) -> str:
    copies = int(config["copies"])
    strategy = config["parallel"]
    idx = "(int)(x[i] * 256.0f)"
    if copies > 1:
        local = (
            f"    int part[{copies}][256];\n    memset(part, 0, sizeof(part));\n"
            f"    long m = n - n % {copies};\n"
            + ("    #pragma omp for schedule(static)\n" if strategy == "private" else "")
            + f"    for (long i = 0; i < m; i += {copies}) {{\n"
            + "".join(f"        part[{c}][(int)(x[i + {c}] * 256.0f)]++;\n" for c in range(copies))
            + "    }\n"
            + ("    #pragma omp single nowait\n" if strategy == "private" else "")
            + "    for (long i = m; i < n; i++) part[0][(int)(x[i] * 256.0f)]++;\n"
            f"    for (int c = 0; c < {copies}; c++) for (int b = 0; b < 256; b++) mine[b] += part[c][b];\n"
        )
    else:
        local = (
            "    #pragma omp for schedule(static)\n" if strategy == "private" else ""
        ) + f"    for (long i = 0; i < n; i++) mine[{idx}]++;\n"
    if strategy == "private":
        body = (
            "    memset(hist, 0, sizeof(int) * 256);\n"
            "    #pragma omp parallel\n    {\n    int mine[256];\n    memset(mine, 0, sizeof(mine));\n"
            + local
            + "    #pragma omp critical\n    for (int b = 0; b < 256; b++) hist[b] += mine[b];\n    }\n"
        )
    elif strategy == "atomic":
        body = (
            "    memset(hist, 0, sizeof(int) * 256);\n"
            "    #pragma omp parallel for schedule(static)\n"
            f"    for (long i = 0; i < n; i++) {{\n        #pragma omp atomic\n        hist[{idx}]++;\n    }}\n"
        )
    else:
        body = "    int* mine = hist;\n    memset(hist, 0, sizeof(int) * 256);\n" + local
    return (
        C_PRELUDE + f"/* histogram {dict(config)} */\n"
        "void kernel(const float* restrict x, int* restrict hist, int n) {\n" + body + "}\n"
    )


def task() -> Task:
    return Task(
        name="histogram",
        family="scatter",
        patterns=("scatter", "data-dependent-index", "contention"),
        description="256-bin histogram (int32 counts) of 8M fp32 values in [0, 1) (small 40009).",
        dtype="float32",
        make_inputs=make_inputs,
        output_shapes=lambda x: {"hist": (BINS,)},
        reference=reference,
        flops=lambda x: float(x["x"].size),
        bytes_moved=lambda x: 4.0 * x["x"].size,
        baseline_config={"parallel": "none", "copies": 1},
        transforms=(
            set_knob(Transform.PARALLELIZE, "parallel", ("private", "atomic")),
            set_knob(Transform.PRIVATIZE, "copies", (4, 1)),
        ),
        render={"c": render_c},
        sizes=lambda x: {"n": x["x"].size},
        output_dtypes={"hist": "int32"},
    )
