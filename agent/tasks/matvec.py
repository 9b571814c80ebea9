"""Matrix-vector product y = A @ x: a streaming row reduction, latency-bound until vectorized."""

from __future__ import annotations

from kernelgraph.agent.tasks._common import (
    c_source,
    f32,
    omp_for,
    par_simd,
    parallelize,
    rng,
    schedule,
    set_knob,
    simd,
    split_sum,
    turn_on,
    vloop,
)
from kernelgraph.agent.tasks._define import (
    define_task,
    dims,
    per_element,
    product_sums_scale,
    signed_wide_inputs,
)
from kernelgraph.agent.tasks.base import Arrays, Config, Instance, LibraryCall, Shape, Task
from kernelgraph.agent.transforms import Transform

FULL, SMALL = (6144, 2048), (67, 45)


def inputs_at(seed: int, shape: Shape) -> Arrays:
    m, n = shape
    g = rng(seed)
    return {"a": f32(g.uniform(-1, 1, (m, n))), "x": f32(g.uniform(-1, 1, n))}


def reference(inputs: Arrays) -> Arrays:
    return {"y": (inputs["a"].astype("f8") @ inputs["x"].astype("f8")).astype("f4")}


def render_c(config: Config) -> str:
    return c_source(
        "matvec",
        config,
        "const float* restrict a, const float* restrict x, float* restrict y, int m, int n",
        _body(config),
    )


def _body(config: Config) -> str:
    if config["order"] == "col":
        # Column sweep: y += A[:, j] * x[j]; strided through A, parallel forks once per column.
        return (
            "    for (int i = 0; i < m; i++) y[i] = 0.0f;\n"
            "    for (int j = 0; j < n; j++) {\n        float xj = x[j];\n"
            + par_simd(config)
            + "        for (int i = 0; i < m; i++) y[i] += a[(long)i * n + j] * xj;\n    }\n"
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
            f"    const int mm = m - m % {rows};\n"
            + omp_for(config)
            + f"    for (int i = 0; i < mm; i += {rows}) {{\n"
            + dot
            + "    }\n    for (int i = mm; i < m; i++) {\n        float s = 0.0f;\n"
            "        for (int k = 0; k < n; k++) s += a[(long)i * n + k] * x[k];\n        y[i] = s;\n    }\n"
        )
    if acc > 1:
        dot = split_sum(
            config, "s", acc, lambda k: f"row[{k}] * x[{k}]", index="k", lo="0", hi="n", end="const int nm"
        )
    else:
        dot = "        float s = 0.0f;\n" + vloop(
            config, "k", "0", "n", "s += row[k] * x[k];", reduction="+:s", pad="        "
        )
    return (
        omp_for(config)
        + "    for (int i = 0; i < m; i++) {\n        const float* row = a + (long)i * n;\n"
        + dot
        + "        y[i] = s;\n    }\n"
    )


def _row_only(config: Config) -> bool:
    return bool(config["order"] == "row")


INSTANCES = (
    Instance("48x96", (48, 96), "L1"),
    Instance("512x768", (512, 768), "L2"),
    Instance("2048x1024", (2048, 1024), "LLC"),
    Instance("128x16384", (128, 16384), "LLC"),
)


LIBRARY = LibraryCall(
    numpy=lambda x: {"y": x["a"] @ x["x"]},
    numpy_call="a @ x",
    torch=lambda torch, x: {"y": torch.mv(x["a"], x["x"])},
    torch_call="torch.mv(a, x)",
)


def task() -> Task:
    return define_task(
        name="matvec",
        family="dense-matvec",
        patterns=("row-major-stream", "row-reduction", "broadcast-vector"),
        description="y = A @ x, A is 6144x2048 fp32 (small 67x45).",
        inputs_at=inputs_at,
        small=SMALL,
        full=FULL,
        output_shapes=lambda x: {"y": (x["a"].shape[0],)},
        reference=reference,
        # Signs random, magnitudes 2^-10..2^10: many outputs are sums that cancel to near zero.
        edge_inputs=signed_wide_inputs("a", "x"),
        error_scale=product_sums_scale("y", "a", "x"),
        library=LIBRARY,
        flops=per_element("a", 2.0),
        bytes_moved=lambda x: 4.0 * (x["a"].size + x["x"].size + x["a"].shape[0]),
        sizes=dims("a", "m", "n"),
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
        render_c=render_c,
        instances=INSTANCES,
    )
