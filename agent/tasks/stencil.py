"""One Jacobi sweep of a 2-D 5-point stencil; the border is copied unchanged."""

from __future__ import annotations

from typing import Any

import numpy as np

from kernelgraph.agent.tasks._common import (
    EDGE_SEED,
    c_source,
    f32,
    nt_fence,
    nt_store,
    omp_for,
    parallelize,
    prelude,
    rng,
    schedule,
    set_knob,
    simd,
    turn_on,
    vloop,
)
from kernelgraph.agent.tasks._define import define_task, dims, per_element, shaped_like
from kernelgraph.agent.tasks.base import Arrays, Config, Instance, LibraryCall, Shape, Task
from kernelgraph.agent.transforms import Transform

FULL, SMALL = (2048, 1024), (41, 53)


def inputs_at(seed: int, shape: Shape) -> Arrays:
    h, w = shape
    return {"u": f32(rng(seed).uniform(0, 1, (h, w)))}


def _sweep(mid: Any, up: Any, down: Any) -> Any:
    """Interior rows of v from their rows of u (`mid`) and the rows above and below; the border
    columns are copied. Numpy arrays and torch tensors slice alike."""
    v = mid.copy() if isinstance(mid, np.ndarray) else mid.clone()
    v[:, 1:-1] = 0.2 * (mid[:, 1:-1] + up[:, 1:-1] + down[:, 1:-1] + mid[:, :-2] + mid[:, 2:])
    return v


def _five_point(u: Any) -> Any:
    v = u.copy() if isinstance(u, np.ndarray) else u.clone()
    v[1:-1] = _sweep(u[1:-1], u[:-2], u[2:])
    return v


def reference(inputs: Arrays) -> Arrays:
    return {"v": _five_point(inputs["u"].astype("f8")).astype("f4")}


def row_reference(inputs: Arrays, rows: np.ndarray) -> Arrays:
    """Rows `rows` of `reference`, each from its row of u and its halo (the rows above and below)."""
    u = inputs["u"]
    last = u.shape[0] - 1
    mid = u[rows].astype("f8")
    v = _sweep(mid, u[np.maximum(rows - 1, 0)].astype("f8"), u[np.minimum(rows + 1, last)].astype("f8"))
    border = (rows == 0) | (rows == last)
    v[border] = mid[border]
    return {"v": v.astype("f4")}


def render_c(config: Config) -> str:
    point = nt_store(
        config,
        "v[(long)i * w + j]",
        "0.2f * (u[(long)i * w + j] + u[(long)(i - 1) * w + j] + u[(long)(i + 1) * w + j]"
        " + u[(long)i * w + j - 1] + u[(long)i * w + j + 1])",
    )
    tile = int(config["tile"])
    if config["order"] == "col":
        sweep = (
            omp_for(config)
            + "    for (int j = 1; j < w - 1; j++)\n"
            + simd(config)
            + "    for (int i = 1; i < h - 1; i++)\n        "
            + point
            + "\n"
        )
    elif tile:
        sweep = (
            omp_for(config) + f"    for (int ii = 1; ii < h - 1; ii += {tile})\n"
            f"    for (int jj = 1; jj < w - 1; jj += {tile})\n"
            f"    for (int i = ii; i < ii + {tile} && i < h - 1; i++) {{\n"
            f"        int jend = jj + {tile} < w - 1 ? jj + {tile} : w - 1;\n"
            + vloop(config, "j", "jj", "jend", point, pad="        ")
            + "    }\n"
        )
    else:
        sweep = (
            omp_for(config)
            + "    for (int i = 1; i < h - 1; i++) {\n"
            + vloop(config, "j", "1", "w - 1", point, pad="        ")
            + "    }\n"
        )
    return c_source(
        "stencil",
        config,
        "const float* restrict u, float* restrict v, int h, int w",
        "    memcpy(v, u, sizeof(float) * (size_t)w);\n"
        "    memcpy(v + (long)(h - 1) * w, u + (long)(h - 1) * w, sizeof(float) * (size_t)w);\n"
        "    for (int i = 1; i < h - 1; i++) { v[(long)i * w] = u[(long)i * w];"
        " v[(long)i * w + w - 1] = u[(long)i * w + w - 1]; }\n" + sweep + nt_fence(config),
        head=prelude(config),
    )


INSTANCES = (
    Instance("48x64", (48, 64), "L1"),
    Instance("384x512", (384, 512), "L2"),
    Instance("1024x1024", (1024, 1024), "LLC"),
)


def edge_inputs(inputs: Arrays) -> Arrays:
    """Positive values of magnitudes 1e-6 to 1e6 side by side."""
    g = rng(EDGE_SEED)
    shape = inputs["u"].shape
    return {"u": f32(g.uniform(0.5, 1.0, shape) * 10.0 ** g.uniform(-6, 6, shape))}


LIBRARY = LibraryCall(
    numpy=lambda x: {"v": _five_point(x["u"])},
    numpy_call="v = u.copy(); v[1:-1, 1:-1] = 0.2 * (five shifted slices of u)",
    torch=lambda torch, x: {"v": _five_point(x["u"])},
    torch_call="v = u.clone(); v[1:-1, 1:-1] = 0.2 * (five shifted slices of u)",
)


def task() -> Task:
    return define_task(
        name="stencil2d",
        family="stencil",
        patterns=("stencil-2d", "neighbor-reuse", "row-major-stream"),
        description="One 5-point Jacobi sweep over a 2048x1024 fp32 grid (small 41x53).",
        inputs_at=inputs_at,
        small=SMALL,
        full=FULL,
        output_shapes=shaped_like("u", "v"),
        reference=reference,
        row_reference=row_reference,
        edge_inputs=edge_inputs,
        library=LIBRARY,
        flops=per_element("u", 5.0),
        bytes_moved=per_element("u", 8.0),
        sizes=dims("u", "h", "w"),
        baseline_config={
            "order": "col",
            "tile": 0,
            "simd": False,
            "unroll": 1,
            "stream": False,
            "parallel": False,
            "schedule": "static",
        },
        transforms=(
            set_knob(
                Transform.INTERCHANGE,
                "order",
                ("row", "col"),
                requires=lambda c: c["tile"] == 0 and c["unroll"] == 1,
            ),
            set_knob(Transform.TILE, "tile", (64, 16, 256, 0), requires=lambda c: c["order"] == "row"),
            set_knob(Transform.UNROLL, "unroll", (4, 1), requires=lambda c: c["order"] == "row"),
            turn_on(Transform.VECTORIZE, "simd"),
            turn_on(Transform.NONTEMPORAL, "stream"),
            parallelize(),
            schedule(),
        ),
        render_c=render_c,
        instances=INSTANCES,
    )
