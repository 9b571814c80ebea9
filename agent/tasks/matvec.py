"""Matrix-vector product y = A @ x: a streaming row reduction, latency-bound until vectorized."""

from __future__ import annotations

import numpy as np

from kernelgraph.agent.tasks._common import (
    C_PRELUDE,
    EDGE_SEED,
    abs_products,
    f32,
    omp_for,
    par_simd,
    parallelize,
    rng,
    schedule,
    set_knob,
    signed_wide,
    simd,
    turn_on,
    vloop,
)
from kernelgraph.agent.tasks.base import Arrays, Config, Instance, LibraryCall, Shape, Task
from kernelgraph.agent.transforms import Transform

FULL, SMALL = (6144, 2048), (67, 45)


def inputs_at(seed: int, shape: Shape) -> Arrays:
    m, n = shape
    g = rng(seed)
    return {"a": f32(g.uniform(-1, 1, (m, n))), "x": f32(g.uniform(-1, 1, n))}


def make_inputs(seed: int, small: bool) -> Arrays:
    return inputs_at(seed, SMALL if small else FULL)


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
    acc, rows = int(config["acc"]), int(config["rows"])
    if rows > 1:
        # Register tiling: `rows` rows at once share each load of x.
        names = [f"s{r}" for r in range(rows)]
        dot = (
            f"        float {', '.join(v + ' = 0.0f' for v in names)};\n"
            + "".join(f"        const float* row{r} = a + (long)(i + {r}) * n;\n" for r in range(rows))
            + simd(config, "+:" + ",".join(names))
            + "        for (int k = 0; k < n; k++) { float xk = x[k]; "
            + " ".join(f"s{r} += row{r}[k] * xk;" for r in range(rows))
            + " }\n"
            + "".join(f"        y[i + {r}] = s{r};\n" for r in range(rows))
        )
        return (
            head
            + f"    const int mm = m - m % {rows};\n"
            + omp_for(config)
            + f"    for (int i = 0; i < mm; i += {rows}) {{\n"
            + dot
            + "    }\n    for (int i = mm; i < m; i++) {\n        float s = 0.0f;\n"
            "        for (int k = 0; k < n; k++) s += a[(long)i * n + k] * x[k];\n        y[i] = s;\n    }\n}\n"
        )
    if acc > 1:
        names = [f"s{k}" for k in range(acc)]
        dot = (
            f"        float {', '.join(v + ' = 0.0f' for v in names)};\n        const int nm = n - n % {acc};\n"
            + simd(config, "+:" + ",".join(names))
            + f"        for (int k = 0; k < nm; k += {acc}) {{ "
            + " ".join(f"s{q} += row[k + {q}] * x[k + {q}];" for q in range(acc))
            + " }\n"
            f"        float s = {' + '.join(names)};\n"
            "        for (int k = nm; k < n; k++) s += row[k] * x[k];\n"
        )
    else:
        dot = "        float s = 0.0f;\n" + vloop(
            config, "k", "0", "n", "s += row[k] * x[k];", reduction="+:s", pad="        "
        )
    return (
        head
        + omp_for(config)
        + "    for (int i = 0; i < m; i++) {\n        const float* row = a + (long)i * n;\n"
        + dot
        + "        y[i] = s;\n    }\n}\n"
    )


def _row_only(config: Config) -> bool:
    return bool(config["order"] == "row")


INSTANCES = (
    Instance("48x96", (48, 96), "L1"),
    Instance("512x768", (512, 768), "L2"),
    Instance("2048x1024", (2048, 1024), "LLC"),
    Instance("128x16384", (128, 16384), "LLC"),
)


def edge_inputs(inputs: Arrays) -> Arrays:
    """Signs random, magnitudes 2^-10..2^10: many outputs are sums that cancel to near zero."""
    return {"a": signed_wide(inputs["a"].shape), "x": signed_wide(inputs["x"].shape, EDGE_SEED + 1)}


def error_scale(inputs: Arrays) -> dict[str, np.ndarray]:
    return {"y": abs_products(inputs["a"], inputs["x"])}


LIBRARY = LibraryCall(
    numpy=lambda x: {"y": x["a"] @ x["x"]},
    numpy_call="a @ x",
    torch=lambda torch, x: {"y": torch.mv(x["a"], x["x"])},
    torch_call="torch.mv(a, x)",
)


def task() -> Task:
    return Task(
        edge_inputs=edge_inputs,
        error_scale=error_scale,
        name="matvec",
        family="dense-matvec",
        patterns=("row-major-stream", "row-reduction", "broadcast-vector"),
        description="y = A @ x, A is 6144x2048 fp32 (small 67x45).",
        dtype="float32",
        make_inputs=make_inputs,
        output_shapes=lambda x: {"y": (x["a"].shape[0],)},
        reference=reference,
        library=LIBRARY,
        flops=lambda x: 2.0 * x["a"].size,
        bytes_moved=lambda x: 4.0 * (x["a"].size + x["x"].size + x["a"].shape[0]),
        baseline_config={
            "order": "row",
            "acc": 1,
            "rows": 1,
            "unroll": 1,
            "simd": False,
            "parallel": False,
            "schedule": "static",
        },
        transforms=(
            set_knob(
                Transform.INTERCHANGE,
                "order",
                ("col", "row"),
                requires=lambda c: (c["acc"], c["rows"], c["unroll"]) == (1, 1, 1),
            ),
            set_knob(
                Transform.SPLIT_REDUCTION,
                "acc",
                (4, 8, 1),
                requires=lambda c: _row_only(c) and (c["rows"], c["unroll"]) == (1, 1),
            ),
            set_knob(
                Transform.TILE,
                "rows",
                (4, 2, 1),
                requires=lambda c: _row_only(c) and (c["acc"], c["unroll"]) == (1, 1),
            ),
            set_knob(
                Transform.UNROLL,
                "unroll",
                (4, 1),
                requires=lambda c: _row_only(c) and (c["acc"], c["rows"]) == (1, 1),
            ),
            turn_on(Transform.VECTORIZE, "simd"),
            parallelize(),
            schedule(),
        ),
        render={"c": render_c},
        inputs_at=inputs_at,
        instances=INSTANCES,
        sizes=lambda x: {"m": x["a"].shape[0], "n": x["a"].shape[1]},
    )
