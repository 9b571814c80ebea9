"""Dense matmul C = A @ B (square, fp32): the classic loop-order, tiling and vectorization study."""

from __future__ import annotations

import numpy as np

from kernelgraph.agent.tasks._common import (
    C_PRELUDE,
    EDGE_SEED,
    abs_products,
    f32,
    omp_for,
    parallelize,
    rng,
    schedule,
    set_knob,
    signed_wide,
    simd,
    turn_on,
    unroll,
)
from kernelgraph.agent.tasks.base import Arrays, Config, Instance, LibraryCall, Shape, Task
from kernelgraph.agent.transforms import Transform

N_FULL, N_SMALL = 300, 72  # 72 is not a multiple of any tile: edge handling gets checked


def inputs_at(seed: int, shape: Shape) -> Arrays:
    (n,) = shape
    g = rng(seed)
    return {"a": f32(g.uniform(-1, 1, (n, n))), "b": f32(g.uniform(-1, 1, (n, n)))}


def make_inputs(seed: int, small: bool) -> Arrays:
    return inputs_at(seed, (N_SMALL,) if small else (N_FULL,))


def reference(inputs: Arrays) -> Arrays:
    return {"c": (inputs["a"].astype("f8") @ inputs["b"].astype("f8")).astype("f4")}


def render_c(config: Config) -> str:
    order, tile, layout = config["order"], int(config["tile"]), config["layout"]
    bt = layout == "transposed"
    b_at = "bb[(long)j * n + k]" if bt else "bb[(long)k * n + j]"
    prologue = "    const float* bb = b;\n"
    epilogue = ""
    if bt:
        prologue = (
            "    float* bt = (float*)malloc(sizeof(float) * (size_t)n * n);\n"
            + omp_for(config)
            + "    for (int i = 0; i < n; i++)\n"
            "        for (int j = 0; j < n; j++) bt[(long)j * n + i] = b[(long)i * n + j];\n"
            "    const float* bb = bt;\n"
        )
        epilogue = "    free(bt);\n"
    step = tile if tile else 0
    # gcc accepts one loop pragma per loop: with simd on the inner loop, unroll the middle one.
    mid_unroll, inner_unroll = (unroll(config), "") if config["simd"] else ("", unroll(config))
    if order == "ikj":
        inner = (
            "{ float aik = a[(long)i * n + k];\n"
            + simd(config)
            + inner_unroll
            + "for (int j = J0; j < J1; j++) c[(long)i * n + j] += aik * "
            + b_at
            + "; }\n"
        )
        loops = "for (int i = I0; i < I1; i++)\n" + mid_unroll + "for (int k = K0; k < K1; k++)\n" + inner
    else:
        inner = (
            "{ float s = 0.0f;\n"
            + simd(config, "+:s")
            + inner_unroll
            + "for (int k = K0; k < K1; k++) s += a[(long)i * n + k] * "
            + b_at
            + ";\n"
            + "c[(long)i * n + j] += s; }\n"
        )
        loops = "for (int i = I0; i < I1; i++)\n" + mid_unroll + "for (int j = J0; j < J1; j++)\n" + inner
    if step:
        body = (
            omp_for(config) + f"    for (int ii = 0; ii < n; ii += {step}) {{\n"
            f"        int I0 = ii, I1 = ii + {step} < n ? ii + {step} : n;\n"
            "        for (int i = I0; i < I1; i++) memset(c + (long)i * n, 0, sizeof(float) * n);\n"
            f"        for (int kk = 0; kk < n; kk += {step}) {{\n"
            f"        int K0 = kk, K1 = kk + {step} < n ? kk + {step} : n;\n"
            f"        for (int jj = 0; jj < n; jj += {step}) {{\n"
            f"        int J0 = jj, J1 = jj + {step} < n ? jj + {step} : n;\n" + loops + "        }}\n    }\n"
        )
    else:
        body = (
            "    memset(c, 0, sizeof(float) * (size_t)n * n);\n"
            "    const int I0 = 0, I1 = n, K0 = 0, K1 = n, J0 = 0, J1 = n;\n" + omp_for(config) + loops
        )
    return (
        C_PRELUDE + f"/* matmul order={order} tile={tile} layout={layout} unroll={config['unroll']} "
        f"simd={int(bool(config['simd']))} parallel={int(bool(config['parallel']))} */\n"
        "void kernel(const float* restrict a, const float* restrict b, float* restrict c, int n) {\n"
        + prologue
        + body
        + epilogue
        + "}\n"
    )


BASELINE: Config = {
    "order": "ijk",
    "tile": 0,
    "layout": "row",
    "unroll": 1,
    "simd": False,
    "parallel": False,
    "schedule": "static",
}
BEST_KNOWN: Config = {
    "order": "ikj",
    "tile": 64,
    "layout": "row",
    "unroll": 4,
    "simd": True,
    "parallel": True,
    "schedule": "static",
}


# Compute-bound: serial code wins while the whole problem sits in L1; tiling and threads pay later.
INSTANCES = (
    Instance("48", (48,), "L1"),
    Instance("112", (112,), "L2"),
    Instance("208", (208,), "L2"),
)


def edge_inputs(inputs: Arrays) -> Arrays:
    """Signs random, magnitudes 2^-10..2^10: many outputs are sums that cancel to near zero."""
    return {"a": signed_wide(inputs["a"].shape), "b": signed_wide(inputs["b"].shape, EDGE_SEED + 1)}


def error_scale(inputs: Arrays) -> dict[str, np.ndarray]:
    return {"c": abs_products(inputs["a"], inputs["b"])}


LIBRARY = LibraryCall(
    numpy=lambda x: {"c": x["a"] @ x["b"]},
    numpy_call="a @ b",
    torch=lambda torch, x: {"c": torch.mm(x["a"], x["b"])},
    torch_call="torch.mm(a, b)",
)


def task() -> Task:
    return Task(
        edge_inputs=edge_inputs,
        error_scale=error_scale,
        name="matmul",
        family="dense-matmul",
        patterns=("dense-2d", "reuse-blocked", "row-major-stream", "column-stride"),
        description="C = A @ B for square fp32 matrices (n=300; small n=72).",
        dtype="float32",
        make_inputs=make_inputs,
        output_shapes=lambda x: {"c": x["a"].shape},
        reference=reference,
        library=LIBRARY,
        flops=lambda x: 2.0 * x["a"].shape[0] ** 3,
        bytes_moved=lambda x: 3.0 * 4 * x["a"].size,
        baseline_config=BASELINE,
        transforms=(
            set_knob(Transform.INTERCHANGE, "order", ("ikj", "ijk")),
            set_knob(Transform.TILE, "tile", (64, 16, 128, 0)),
            set_knob(Transform.UNROLL, "unroll", (4, 1)),
            turn_on(Transform.VECTORIZE, "simd"),
            parallelize(),
            schedule(),
            set_knob(Transform.CHANGE_LAYOUT, "layout", ("transposed", "row")),
        ),
        render={"c": render_c},
        inputs_at=inputs_at,
        instances=INSTANCES,
        sizes=lambda x: {"n": x["a"].shape[0]},
    )
