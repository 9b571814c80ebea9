"""CSR sparse matrix-vector product: indirect gathers and skewed row lengths (load imbalance)."""

from __future__ import annotations

import numpy as np

from agent.tasks._common import C_PRELUDE, f32, rng, set_knob, simd, turn_on
from agent.tasks.base import Arrays, Config, Task
from agent.transforms import Transform

FULL, SMALL = 150_000, 523
STRUCTURE_SEED = 424242  # the sparsity pattern is fixed; values and x change with the seed


def _structure(rows: int) -> tuple[np.ndarray, np.ndarray]:
    g = rng(STRUCTURE_SEED + rows)
    lengths = g.integers(1, 24, rows)
    lengths[: rows // 16] = g.integers(150, 250, rows // 16)  # heavy rows first: static split is uneven
    row_ptr = np.zeros(rows + 1, dtype=np.int32)
    np.cumsum(lengths, out=row_ptr[1:])
    col_idx = g.integers(0, rows, int(row_ptr[-1])).astype(np.int32)
    return row_ptr, col_idx


def make_inputs(seed: int, small: bool) -> Arrays:
    rows = SMALL if small else FULL
    row_ptr, col_idx = _structure(rows)
    g = rng(seed)
    return {
        "values": f32(g.uniform(-1, 1, col_idx.size)),
        "col_idx": col_idx,
        "row_ptr": row_ptr,
        "x": f32(g.uniform(-1, 1, rows)),
    }


def reference(inputs: Arrays) -> Arrays:
    row_ptr = inputs["row_ptr"]
    rows = row_ptr.size - 1
    row_of = np.repeat(np.arange(rows), np.diff(row_ptr))
    prod = inputs["values"].astype("f8") * inputs["x"].astype("f8")[inputs["col_idx"]]
    return {"y": np.bincount(row_of, weights=prod, minlength=rows).astype("f4")}


def render_c(config: Config) -> str:
    par = config["parallel"]
    pragma = f"#pragma omp parallel for schedule({par}, 64)\n" if par != "none" else ""
    if par == "static":
        pragma = "#pragma omp parallel for schedule(static)\n"
    if int(config["acc"]) == 4:
        dot = (
            "        float s0 = 0.0f, s1 = 0.0f, s2 = 0.0f, s3 = 0.0f;\n        const int hi4 = hi - (hi - lo) % 4;\n"
            + simd(config, "+:s0,s1,s2,s3")
            + "        for (int k = lo; k < hi4; k += 4) {\n"
            "            s0 += values[k] * x[col_idx[k]]; s1 += values[k + 1] * x[col_idx[k + 1]];\n"
            "            s2 += values[k + 2] * x[col_idx[k + 2]]; s3 += values[k + 3] * x[col_idx[k + 3]];\n"
            "        }\n        float s = (s0 + s1) + (s2 + s3);\n"
            "        for (int k = hi4; k < hi; k++) s += values[k] * x[col_idx[k]];\n"
        )
    else:
        dot = (
            "        float s = 0.0f;\n"
            + simd(config, "+:s")
            + "        for (int k = lo; k < hi; k++) s += values[k] * x[col_idx[k]];\n"
        )
    return (
        C_PRELUDE + f"/* spmv {dict(config)} */\n"
        "void kernel(const float* restrict values, const int* restrict col_idx, const int* restrict row_ptr,\n"
        "            const float* restrict x, float* restrict y, int rows, int nnz) {\n"
        + pragma
        + "    for (int i = 0; i < rows; i++) {\n        int lo = row_ptr[i], hi = row_ptr[i + 1];\n"
        + dot
        + "        y[i] = s;\n    }\n}\n"
    )


def task() -> Task:
    return Task(
        name="spmv_csr",
        family="gather",
        patterns=("gather", "indirect-index", "load-imbalance", "row-reduction"),
        description="y = A @ x for a 150000-row CSR matrix with skewed row lengths (small 523 rows).",
        dtype="float32",
        make_inputs=make_inputs,
        output_shapes=lambda x: {"y": (x["row_ptr"].size - 1,)},
        reference=reference,
        flops=lambda x: 2.0 * x["values"].size,
        bytes_moved=lambda x: 12.0 * x["values"].size + 12.0 * x["x"].size,
        baseline_config={"parallel": "none", "acc": 1, "simd": False},
        transforms=(
            set_knob(
                Transform.PARALLELIZE,
                "parallel",
                ("static", "dynamic"),
                requires=lambda c: c["parallel"] == "none",
            ),
            set_knob(
                Transform.SCHEDULE,
                "parallel",
                ("dynamic", "static"),
                requires=lambda c: c["parallel"] != "none",
            ),
            set_knob(Transform.SPLIT_REDUCTION, "acc", (4, 1)),
            turn_on(Transform.VECTORIZE, "simd"),
        ),
        render={"c": render_c},
        sizes=lambda x: {"rows": x["row_ptr"].size - 1, "nnz": x["values"].size},
    )
