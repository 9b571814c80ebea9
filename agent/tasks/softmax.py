"""Row softmax: max, exp-sum and scale passes per row; fusing them trades traffic for extra expf."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from kernelgraph.agent.tasks._common import (
    C_PRELUDE,
    EDGE_SEED,
    f32,
    omp_for,
    parallelize,
    rng,
    schedule,
    set_knob,
    turn_on,
    vloop,
    with_,
)
from kernelgraph.agent.tasks.base import Arrays, Config, Instance, LibraryCall, Shape, Task, TransformSpec
from kernelgraph.agent.transforms import Transform

FULL, SMALL = (2048, 1024), (37, 50)


def inputs_at(seed: int, shape: Shape) -> Arrays:
    r, c = shape
    return {"x": f32(rng(seed).standard_normal((r, c)) * 3.0)}


def make_inputs(seed: int, small: bool) -> Arrays:
    return inputs_at(seed, SMALL if small else FULL)


def reference(inputs: Arrays) -> Arrays:
    x = inputs["x"].astype("f8")
    e = np.exp(x - x.max(axis=1, keepdims=True))
    return {"y": (e / e.sum(axis=1, keepdims=True)).astype("f4")}


# A Cephes-style expf (range reduction by ln 2, degree-6 polynomial, exponent bits): ~2 ulp on the
# inputs softmax feeds it (<= 0), and unlike libm's expf it inlines and vectorizes.
FAST_EXP = """static inline float fexp(float v) {
    v = v < -87.0f ? -87.0f : v;
    float k = __builtin_floorf(v * 1.44269504088896341f + 0.5f);
    float r = v - k * 0.693359375f + k * 2.12194440e-4f;
    float p = 1.9875691500e-4f;
    p = p * r + 1.3981999507e-3f; p = p * r + 8.3334519073e-3f; p = p * r + 4.1665795894e-2f;
    p = p * r + 1.6666665459e-1f; p = p * r + 5.0000001201e-1f;
    p = p * r * r + r + 1.0f;
    union { int i; float f; } e;
    e.i = ((int)k + 127) << 23;
    return p * e.f;
}
"""


def render_c(config: Config) -> str:
    exp = "fexp" if config["fast_exp"] else "expf"
    pad = "        "
    if config["recip"]:
        scale = "        float inv = 1.0f / s;\n" + vloop(config, "j", "0", "c", "yr[j] *= inv;", pad=pad)
    else:
        scale = vloop(config, "j", "0", "c", "yr[j] /= s;", pad=pad)
    if config["fuse"]:
        # Online softmax: one pass for max and sum (rescaling the sum when the max grows),
        # then a second pass that recomputes the exponentials.
        row = (
            "        float m = xr[0], s = 0.0f;\n"
            "        for (int j = 0; j < c; j++) {\n"
            f"            if (xr[j] > m) {{ s = s * {exp}(m - xr[j]) + 1.0f; m = xr[j]; }}\n"
            f"            else s += {exp}(xr[j] - m);\n        }}\n"
            + vloop(config, "j", "0", "c", f"yr[j] = {exp}(xr[j] - m);", pad=pad)
            + scale
        )
    else:
        row = (
            "        float m = xr[0];\n"
            + vloop(config, "j", "0", "c", "m = xr[j] > m ? xr[j] : m;", reduction="max:m", pad=pad)
            + "        float s = 0.0f;\n"
            + vloop(
                config,
                "j",
                "0",
                "c",
                f"{{ float e = {exp}(xr[j] - m); yr[j] = e; s += e; }}",
                reduction="+:s",
                pad=pad,
            )
            + scale
        )
    return (
        C_PRELUDE + (FAST_EXP if config["fast_exp"] else "") + f"/* softmax {dict(config)} */\n"
        "void kernel(const float* restrict x, float* restrict y, int r, int c) {\n"
        + omp_for(config)
        + "    for (int i = 0; i < r; i++) {\n"
        "        const float* xr = x + (long)i * c;\n        float* yr = y + (long)i * c;\n"
        + row
        + "    }\n}\n"
    )


def _strength_reduce(config: Config, params: Mapping[str, Any]) -> Config | None:
    op = params.get("op", "reciprocal")
    key = {"reciprocal": "recip", "fast_exp": "fast_exp"}.get(op)
    return None if key is None else with_(config, **{key: True})


INSTANCES = (
    Instance("16x256", (16, 256), "L1"),
    Instance("256x1024", (256, 1024), "L2"),
    Instance("1024x1024", (1024, 1024), "LLC"),
    Instance("16384x64", (16384, 64), "LLC"),
)


def edge_inputs(inputs: Arrays) -> Arrays:
    """Logits around +80 (even rows) and -80 (odd rows): exp without max-subtraction overflows on the
    first and underflows to denormals on the second."""
    x = inputs["x"]
    sign = np.where(np.arange(x.shape[0]) % 2 == 0, 1.0, -1.0)[:, None]
    return {"x": f32(sign * 80.0 + rng(EDGE_SEED).standard_normal(x.shape) * 3.0)}


def _numpy_softmax(inputs: Arrays) -> Arrays:
    x = inputs["x"]
    e = np.exp(x - x.max(axis=1, keepdims=True))
    return {"y": e / e.sum(axis=1, keepdims=True)}


LIBRARY = LibraryCall(
    numpy=_numpy_softmax,
    numpy_call="e = np.exp(x - x.max(1, keepdims=True)); e / e.sum(1, keepdims=True)",
    torch=lambda torch, x: {"y": torch.softmax(x["x"], dim=1)},
    torch_call="torch.softmax(x, dim=1)",
)


def task() -> Task:
    return Task(
        edge_inputs=edge_inputs,
        name="softmax",
        family="row-reduction",
        patterns=("row-reduction", "row-major-stream", "transcendental", "multi-pass"),
        description="Row-wise softmax of a 2048x1024 fp32 matrix (small 37x50).",
        dtype="float32",
        make_inputs=make_inputs,
        output_shapes=lambda x: {"y": x["x"].shape},
        reference=reference,
        library=LIBRARY,
        flops=lambda x: 5.0 * x["x"].size,
        bytes_moved=lambda x: 8.0 * x["x"].size,
        baseline_config={
            "fuse": False,
            "simd": False,
            "unroll": 1,
            "recip": False,
            "fast_exp": False,
            "parallel": False,
            "schedule": "static",
        },
        transforms=(
            turn_on(Transform.FUSE, "fuse"),
            turn_on(Transform.VECTORIZE, "simd"),
            set_knob(Transform.UNROLL, "unroll", (4, 1)),
            TransformSpec(
                name=str(Transform.STRENGTH_REDUCE),
                params={"op": ("reciprocal", "fast_exp")},
                apply=_strength_reduce,
                description="Multiply by 1/sum instead of dividing, or use an inlined polynomial exp.",
            ),
            parallelize(),
            schedule(),
        ),
        render={"c": render_c},
        inputs_at=inputs_at,
        instances=INSTANCES,
        sizes=lambda x: {"r": x["x"].shape[0], "c": x["x"].shape[1]},
    )
