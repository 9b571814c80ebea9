"""CSR sparse matrix-vector product: indirect gathers and skewed row lengths (load imbalance)."""

from __future__ import annotations

import numpy as np

from kernelgraph.agent.tasks._common import (
    C_PRELUDE,
    EDGE_SEED,
    SCHEDULES,
    f32,
    parallelize,
    rng,
    schedule,
    schedule_of,
    set_knob,
    signed_wide,
    simd,
    turn_on,
    vloop,
)
from kernelgraph.agent.tasks.base import Arrays, Config, LibraryCall, Task
from kernelgraph.agent.transforms import Transform

FULL, SMALL = 300_000, 523
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
    pragma = f"#pragma omp parallel for schedule({schedule_of(config)})\n" if par else ""
    acc = int(config["acc"])
    if acc > 1:
        names = [f"s{k}" for k in range(acc)]
        dot = (
            f"        float {', '.join(v + ' = 0.0f' for v in names)};\n        const int hm = hi - (hi - lo) % {acc};\n"
            + simd(config, "+:" + ",".join(names))
            + f"        for (int k = lo; k < hm; k += {acc}) {{ "
            + " ".join(f"s{q} += values[k + {q}] * x[col_idx[k + {q}]];" for q in range(acc))
            + " }\n"
            f"        float s = {' + '.join(names)};\n"
            "        for (int k = hm; k < hi; k++) s += values[k] * x[col_idx[k]];\n"
        )
    else:
        dot = "        float s = 0.0f;\n" + vloop(
            config, "k", "lo", "hi", "s += values[k] * x[col_idx[k]];", reduction="+:s", pad="        "
        )
    return (
        C_PRELUDE + f"/* spmv {dict(config)} */\n"
        "void kernel(const float* restrict values, const int* restrict col_idx, const int* restrict row_ptr,\n"
        "            const float* restrict x, float* restrict y, int rows, int nnz) {\n"
        "    (void)nnz;\n"
        + pragma
        + "    for (int i = 0; i < rows; i++) {\n        int lo = row_ptr[i], hi = row_ptr[i + 1];\n"
        + dot
        + "        y[i] = s;\n    }\n}\n"
    )


def edge_inputs(inputs: Arrays) -> Arrays:
    """The same structure; values and x of random sign, magnitudes 2^-10..2^10 (rows that cancel)."""
    return {**inputs, "values": signed_wide(inputs["values"].shape),
            "x": signed_wide(inputs["x"].shape, EDGE_SEED + 1)}  # fmt: skip


def error_scale(inputs: Arrays) -> dict[str, np.ndarray]:
    abs_values = {**inputs, "values": np.abs(inputs["values"]), "x": np.abs(inputs["x"])}
    return {"y": reference(abs_values)["y"].astype("f8")}


LIBRARY = LibraryCall(
    numpy=lambda x: {"y": np.add.reduceat(x["values"] * x["x"][x["col_idx"]], x["row_ptr"][:-1])},
    numpy_call="np.add.reduceat(values * x[col_idx], row_ptr[:-1])  # every row has an entry",
    torch=lambda torch, x: {
        "y": torch.sparse_csr_tensor(x["row_ptr"], x["col_idx"], x["values"], (x["x"].shape[0],) * 2) @ x["x"]
    },
    torch_call="torch.sparse_csr_tensor(row_ptr, col_idx, values) @ x",
)


def task() -> Task:
    return Task(
        edge_inputs=edge_inputs,
        error_scale=error_scale,
        name="spmv_csr",
        family="gather",
        patterns=("gather", "indirect-index", "load-imbalance", "row-reduction"),
        description="y = A @ x for a 300000-row CSR matrix with skewed row lengths (small 523 rows).",
        dtype="float32",
        make_inputs=make_inputs,
        output_shapes=lambda x: {"y": (x["row_ptr"].size - 1,)},
        reference=reference,
        library=LIBRARY,
        flops=lambda x: 2.0 * x["values"].size,
        bytes_moved=lambda x: 12.0 * x["values"].size + 12.0 * x["x"].size,
        baseline_config={"parallel": False, "schedule": "static", "acc": 1, "unroll": 1, "simd": False},
        transforms=(
            parallelize(),
            schedule((*SCHEDULES, "static,64", "dynamic,256")),
            set_knob(Transform.SPLIT_REDUCTION, "acc", (4, 2, 1), requires=lambda c: c["unroll"] == 1),
            set_knob(Transform.UNROLL, "unroll", (4, 8, 1), requires=lambda c: c["acc"] == 1),
            turn_on(Transform.VECTORIZE, "simd"),
        ),
        render={"c": render_c},
        sizes=lambda x: {"rows": x["row_ptr"].size - 1, "nnz": x["values"].size},
    )
