"""CSR sparse matrix-vector product: indirect gathers and skewed row lengths (load imbalance)."""

from __future__ import annotations

import numpy as np

from kernelgraph.agent.tasks._common import (
    SCHEDULES,
    c_source,
    f32,
    parallelize,
    rng,
    schedule,
    schedule_of,
    set_knob,
    split_sum,
    turn_on,
    vloop,
)
from kernelgraph.agent.tasks._define import define_task, signed_wide_inputs
from kernelgraph.agent.tasks.base import Arrays, Config, Instance, LibraryCall, Shape, Task
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


# ~24 nonzeros a row at 8 bytes each plus x and y: 3000 rows fit a 1 MiB L2, 100000 (~30 MB) leave it.
INSTANCES = (Instance("3000", (3000,), "L2"), Instance("100000", (100000,), "LLC"))


def inputs_at(seed: int, shape: Shape) -> Arrays:
    (rows,) = shape
    row_ptr, col_idx = _structure(rows)
    g = rng(seed)
    return {
        "values": f32(g.uniform(-1, 1, col_idx.size)),
        "col_idx": col_idx,
        "row_ptr": row_ptr,
        "x": f32(g.uniform(-1, 1, rows)),
    }


def reference(inputs: Arrays) -> Arrays:
    return row_reference(inputs, np.arange(inputs["row_ptr"].size - 1))


def row_reference(inputs: Arrays, rows: np.ndarray) -> Arrays:
    """Rows `rows` of y: each the sum, in order and in float64, of its CSR slice's products."""
    row_ptr = inputs["row_ptr"].astype(np.int64)
    starts, lengths = row_ptr[rows], row_ptr[rows + 1] - row_ptr[rows]
    values, cols = inputs["values"], inputs["col_idx"]
    if len(rows) < row_ptr.size - 1:  # (sorted and distinct: all of them are every row, in order)
        # the positions of the rows' nonzeros, row after row
        at = np.repeat(starts - (np.cumsum(lengths) - lengths), lengths) + np.arange(int(lengths.sum()))
        values, cols = values[at], cols[at]
    prod = values.astype("f8") * inputs["x"].astype("f8")[cols]
    row_of = np.repeat(np.arange(len(rows)), lengths)
    return {"y": np.bincount(row_of, weights=prod, minlength=len(rows)).astype("f4")}


def render_c(config: Config) -> str:
    par = config["parallel"]
    pragma = f"#pragma omp parallel for schedule({schedule_of(config)})\n" if par else ""
    acc = int(config["acc"])
    if acc > 1:
        dot = split_sum(
            config,
            "s",
            acc,
            lambda k: f"values[{k}] * x[col_idx[{k}]]",
            index="k",
            lo="lo",
            hi="hi",
            end="const int hm",
        )
    else:
        step = "s += values[k] * x[col_idx[k]];"
        distance = int(config["prefetch"])
        if distance:
            # The gather's next targets, `distance` nonzeros ahead (hardware prefetchers cannot guess them).
            step = f"{{ if (k + {distance} < nnz) __builtin_prefetch(x + col_idx[k + {distance}]); {step} }}"
        dot = "        float s = 0.0f;\n" + vloop(
            config, "k", "lo", "hi", step, reduction="+:s", pad="        "
        )
    return c_source(
        "spmv",
        config,
        "const float* restrict values, const int* restrict col_idx, const int* restrict row_ptr,\n"
        "            const float* restrict x, float* restrict y, int rows, int nnz",
        ("" if int(config["prefetch"]) else "    (void)nnz;\n")
        + pragma
        + "    for (int i = 0; i < rows; i++) {\n        int lo = row_ptr[i], hi = row_ptr[i + 1];\n"
        + dot
        + "        y[i] = s;\n    }\n",
    )


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
    return define_task(
        name="spmv_csr",
        family="gather",
        patterns=("gather", "indirect-index", "load-imbalance", "row-reduction"),
        description="y = A @ x for a 300000-row CSR matrix with skewed row lengths (small 523 rows).",
        inputs_at=inputs_at,
        small=(SMALL,),
        full=(FULL,),
        output_shapes=lambda x: {"y": (x["row_ptr"].size - 1,)},
        reference=reference,
        row_reference=row_reference,
        # The same structure; values and x of random sign, magnitudes 2^-10..2^10 (rows that cancel).
        edge_inputs=signed_wide_inputs("values", "x"),
        error_scale=error_scale,
        library=LIBRARY,
        flops=lambda x: 2.0 * x["values"].size,
        bytes_moved=lambda x: 12.0 * x["values"].size + 12.0 * x["x"].size,
        baseline_config={
            "parallel": False,
            "schedule": "static",
            "acc": 1,
            "unroll": 1,
            "simd": False,
            "prefetch": 0,
        },
        transforms=(
            parallelize(),
            schedule((*SCHEDULES, "static,64", "dynamic,256")),
            set_knob(
                Transform.SPLIT_REDUCTION,
                "acc",
                (4, 2, 1),
                requires=lambda c: c["unroll"] == 1 and not c["prefetch"],
            ),
            set_knob(Transform.UNROLL, "unroll", (4, 8, 1), requires=lambda c: c["acc"] == 1),
            turn_on(Transform.VECTORIZE, "simd", requires=lambda c: not c["prefetch"]),
            set_knob(
                Transform.PREFETCH,
                "prefetch",
                (16, 64, 0),
                requires=lambda c: c["acc"] == 1 and not c["simd"],
            ),
        ),
        render_c=render_c,
        sizes=lambda x: {"rows": x["row_ptr"].size - 1, "nnz": x["values"].size},
        instances=INSTANCES,
    )
