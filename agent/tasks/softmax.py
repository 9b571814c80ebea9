"""Row softmax: max, exp-sum and scale passes per row; fusing them trades traffic for extra expf."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from kernelgraph.agent.tasks._common import (
    C_PRELUDE,
    EDGE_SEED,
    VECTOR_WIDTHS,
    c_source,
    f32,
    parallelize,
    rng,
    row_loop,
    schedule,
    set_knob,
    turn_on,
    vector_width,
    vloop,
    with_,
)
from kernelgraph.agent.tasks._define import define_task, dims, per_element, shaped_like
from kernelgraph.agent.tasks.base import Arrays, Config, Instance, LibraryCall, Shape, Task, TransformSpec
from kernelgraph.agent.transforms import Transform

FULL, SMALL = (2048, 1024), (37, 50)


def inputs_at(seed: int, shape: Shape) -> Arrays:
    r, c = shape
    return {"x": f32(rng(seed).standard_normal((r, c)) * 3.0)}


def _numpy_softmax(inputs: Arrays) -> Arrays:
    x = inputs["x"]
    e = np.exp(x - x.max(axis=1, keepdims=True))
    return {"y": e / e.sum(axis=1, keepdims=True)}


def reference(inputs: Arrays) -> Arrays:
    return {"y": _numpy_softmax({"x": inputs["x"].astype("f8")})["y"].astype("f4")}


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


# The same polynomial on a whole vector (GCC vector extensions): floor by truncation and a
# correction, 2^k by building the exponent bits, so exp costs ~10 vector instructions per W lanes.
VECTOR_EXP = """#define vexp(x) ({ \
    vf v_ = vmax((x), (vf){0} - 87.0f); \
    vf t_ = v_ * 1.44269504088896341f + 0.5f; \
    vi ki_ = __builtin_convertvector(t_, vi); \
    vf k_ = __builtin_convertvector(ki_, vf); \
    ki_ += (vi)(k_ > t_); k_ = __builtin_convertvector(ki_, vf); \
    vf r_ = v_ - k_ * 0.693359375f + k_ * 2.12194440e-4f; \
    vf p_ = (vf){0} + 1.9875691500e-4f; \
    p_ = p_ * r_ + 1.3981999507e-3f; p_ = p_ * r_ + 8.3334519073e-3f; p_ = p_ * r_ + 4.1665795894e-2f; \
    p_ = p_ * r_ + 1.6666665459e-1f; p_ = p_ * r_ + 5.0000001201e-1f; \
    p_ = p_ * r_ * r_ + r_ + 1.0f; \
    p_ * (vf)((ki_ + 127) << 23); })
"""


# C has no ?: on vectors (only C++ does): a lane-wise max is a compare mask and bit selects.
# The helpers are statement-expression macros, not functions: a function taking a vector wider
# than an SSE target's registers draws gcc's psABI warnings, and each must inline anyway.
VECTOR_MAX = """typedef int vi __attribute__((vector_size(sizeof(vf))));
#define vmax(a, b) ({ vf a_ = (a), b_ = (b); vi m_ = a_ > b_; (vf)((m_ & (vi)a_) | (~m_ & (vi)b_)); })
"""


def _vector_row(config: Config) -> str:
    """One row with explicit vectors of `width` lanes: max, exp-sum and scale (or, one-pass, a
    per-lane online max and rescaled sum, then one pass writing exp(x - m) / s)."""
    w = int(config["width"])
    exp = "vexp" if config["vector_math"] else "lane_exp"
    scalar_exp = "fexp" if config["fast_exp"] else "expf"
    head = f"        const int cw = c - c % {w};\n"
    hmax = f"        float m = -INFINITY; for (int l = 0; l < {w}; l++) m = mv[l] > m ? mv[l] : m;\n"
    if config["one_pass"]:
        pass1 = (
            f"        vf mv = (vf){{0}} - INFINITY, sv = (vf){{0}};\n"
            f"        for (int j = 0; j < cw; j += {w}) {{ vf xv = *(const vf*)(xr + j);"
            f" vf mn = vmax(xv, mv); sv = sv * {exp}(mv - mn) + {exp}(xv - mn); mv = mn; }}\n"
            + hmax
            + "        for (int j = cw; j < c; j++) m = xr[j] > m ? xr[j] : m;\n"
            f"        float s = 0.0f; for (int l = 0; l < {w}; l++) if (cw) s += sv[l] * {scalar_exp}(mv[l] - m);\n"
            f"        for (int j = cw; j < c; j++) s += {scalar_exp}(xr[j] - m);\n"
        )
        pass2 = (
            "        float inv = 1.0f / s;\n"
            f"        for (int j = 0; j < cw; j += {w}) *(vf*)(yr + j) = {exp}(*(const vf*)(xr + j) - m) * inv;\n"
            f"        for (int j = cw; j < c; j++) yr[j] = {scalar_exp}(xr[j] - m) * inv;\n"
        )
        return head + pass1 + pass2
    return head + (
        f"        vf mv = (vf){{0}} - INFINITY;\n"
        f"        for (int j = 0; j < cw; j += {w}) {{ vf xv = *(const vf*)(xr + j); mv = vmax(xv, mv); }}\n"
        + hmax
        + "        for (int j = cw; j < c; j++) m = xr[j] > m ? xr[j] : m;\n"
        "        vf sv = (vf){0};\n"
        f"        for (int j = 0; j < cw; j += {w}) {{ vf e = {exp}(*(const vf*)(xr + j) - m); *(vf*)(yr + j) = e; sv += e; }}\n"
        f"        float s = 0.0f; for (int l = 0; l < {w}; l++) s += sv[l];\n"
        f"        for (int j = cw; j < c; j++) {{ float e = {scalar_exp}(xr[j] - m); yr[j] = e; s += e; }}\n"
        "        float inv = 1.0f / s;\n"
        f"        for (int j = 0; j < cw; j += {w}) *(vf*)(yr + j) *= inv;\n"
        "        for (int j = cw; j < c; j++) yr[j] *= inv;\n"
    )


SIGNATURE = "const float* restrict x, float* restrict y, int r, int c"


def render_c(config: Config) -> str:
    if int(config["width"]):
        return render_vector(config)
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
    return c_source(
        "softmax",
        config,
        SIGNATURE,
        row_loop(config, row),
        head=C_PRELUDE + (FAST_EXP if config["fast_exp"] else ""),
    )


def render_vector(config: Config) -> str:
    w = int(config["width"])
    lane_exp = "fexp" if config["fast_exp"] else "expf"
    # Without vector_math, exp goes lane by lane through the scalar function (what gcc does anyway).
    lanes = (
        ""
        if config["vector_math"]
        else f"#define lane_exp(x) ({{ vf e_ = (x); for (int l_ = 0; l_ < {w}; l_++) e_[l_] = {lane_exp}(e_[l_]); e_; }})\n"
    )
    head = (
        C_PRELUDE
        + f"typedef float vf __attribute__((vector_size({w * 4}), aligned(4)));\n"
        + VECTOR_MAX
        + (FAST_EXP if config["fast_exp"] else "")
        + (VECTOR_EXP if config["vector_math"] else lanes)
    )
    return c_source("softmax", config, SIGNATURE, row_loop(config, _vector_row(config)), head=head)


# The loop-form knobs mean nothing to the explicit-vector kernel: reset, so one kernel has one config.
LOOP_FORM: Config = {"fuse": False, "simd": False, "unroll": 1, "recip": False}


def _vector_width(config: Config, params: Mapping[str, Any]) -> Config | None:
    return with_(config, **LOOP_FORM, width=int(params.get("width", VECTOR_WIDTHS[0])))


def _vector(config: Config) -> bool:
    return bool(int(config["width"]))


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


LIBRARY = LibraryCall(
    numpy=_numpy_softmax,
    numpy_call="e = np.exp(x - x.max(1, keepdims=True)); e / e.sum(1, keepdims=True)",
    torch=lambda torch, x: {"y": torch.softmax(x["x"], dim=1)},
    torch_call="torch.softmax(x, dim=1)",
)


def task() -> Task:
    return define_task(
        name="softmax",
        family="row-reduction",
        patterns=("row-reduction", "row-major-stream", "transcendental", "multi-pass"),
        description="Row-wise softmax of a 2048x1024 fp32 matrix (small 37x50).",
        inputs_at=inputs_at,
        small=SMALL,
        full=FULL,
        output_shapes=shaped_like("x", "y"),
        reference=reference,
        edge_inputs=edge_inputs,
        library=LIBRARY,
        flops=per_element("x", 5.0),
        bytes_moved=per_element("x", 8.0),
        sizes=dims("x", "r", "c"),
        baseline_config={
            "fuse": False,
            "simd": False,
            "unroll": 1,
            "recip": False,
            "fast_exp": False,
            "parallel": False,
            "schedule": "static",
            "width": 0,
            "vector_math": False,
            "one_pass": False,
        },
        transforms=(
            turn_on(Transform.FUSE, "fuse", requires=lambda c: not _vector(c)),
            turn_on(Transform.VECTORIZE, "simd", requires=lambda c: not _vector(c)),
            set_knob(Transform.UNROLL, "unroll", (4, 1), requires=lambda c: not _vector(c)),
            TransformSpec(
                name=str(Transform.STRENGTH_REDUCE),
                params={"op": ("reciprocal", "fast_exp")},
                apply=lambda c, p: (
                    None if _vector(c) and p.get("op") == "reciprocal" else _strength_reduce(c, p)
                ),
                description="Multiply by 1/sum instead of dividing, or use an inlined polynomial exp.",
            ),
            parallelize(),
            schedule(),
            vector_width(_vector_width, "Rows"),
            turn_on(
                Transform.VECTOR_MATH,
                "vector_math",
                requires=_vector,
                description="exp on whole vectors: an inlined polynomial with exponent-bit scaling.",
            ),
            turn_on(
                Transform.ONE_PASS,
                "one_pass",
                requires=_vector,
                description="Online softmax: per-lane running max and rescaled sum in one pass, then one pass writing y.",
            ),
        ),
        render_c=render_c,
        instances=INSTANCES,
    )
