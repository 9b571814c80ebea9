"""Full sum reduction of a long fp32 vector (accumulated in double so every variant is exact enough)."""

from __future__ import annotations

import numpy as np

from kernelgraph.agent.tasks._common import (
    C_PRELUDE,
    f32,
    par_simd,
    parallelize,
    rng,
    schedule,
    set_knob,
    signed_wide,
    turn_on,
    vloop,
)
from kernelgraph.agent.tasks.base import Arrays, Config, Instance, LibraryCall, Shape, Task
from kernelgraph.agent.transforms import Transform

FULL, SMALL = 8 * 1024 * 1024, 100_003


def inputs_at(seed: int, shape: Shape) -> Arrays:
    return {"x": f32(rng(seed).uniform(-1, 1, shape))}


def make_inputs(seed: int, small: bool) -> Arrays:
    return inputs_at(seed, (SMALL,) if small else (FULL,))


def reference(inputs: Arrays) -> Arrays:
    return {"out": np.array([inputs["x"].astype("f8").sum()], dtype="f4")}


def render_c(config: Config) -> str:
    acc = int(config["acc"])
    if acc > 1:
        names = [f"s{k}" for k in range(acc)]
        red = "+:" + ",".join(names)
        adds = " ".join(f"{v} += x[i + {k}];" for k, v in enumerate(names))
        body = (
            f"    double {', '.join(v + ' = 0.0' for v in names)};\n    long m = n - n % {acc};\n"
            + par_simd(config, red)
            + f"    for (long i = 0; i < m; i += {acc}) {{ {adds} }}\n"
            f"    double s = {' + '.join(names)};\n    for (long i = m; i < n; i++) s += x[i];\n"
        )
    else:
        body = "    double s = 0.0;\n" + vloop(
            config, "i", "0", "n", "s += x[i];", reduction="+:s", parallel=bool(config["parallel"])
        )
    return (
        C_PRELUDE + f"/* reduction {dict(config)} */\n"
        "void kernel(const float* restrict x, float* restrict out, int n) {\n"
        + body
        + "    out[0] = (float)s;\n}\n"
    )


INSTANCES = (
    Instance("8192", (8192,), "L1"),
    Instance("262144", (262144,), "L2"),
    Instance("2097152", (2097152,), "LLC"),
)


def edge_inputs(inputs: Arrays) -> Arrays:
    """Signs random, magnitudes 2^-10..2^10: a sum that cancels to near zero."""
    return {"x": signed_wide(inputs["x"].shape)}


def error_scale(inputs: Arrays) -> dict[str, np.ndarray]:
    return {"out": np.abs(inputs["x"].astype("f8")).sum(keepdims=True)}


LIBRARY = LibraryCall(
    numpy=lambda x: {"out": x["x"].sum()},
    numpy_call="x.sum()",
    torch=lambda torch, x: {"out": x["x"].sum()},
    torch_call="x.sum()",
)


def task() -> Task:
    return Task(
        edge_inputs=edge_inputs,
        error_scale=error_scale,
        name="reduction",
        family="reduction",
        patterns=("full-reduction", "contiguous-stream"),
        description="Sum of 8M fp32 values into one scalar (small 100003).",
        dtype="float32",
        make_inputs=make_inputs,
        output_shapes=lambda x: {"out": (1,)},
        reference=reference,
        library=LIBRARY,
        flops=lambda x: float(x["x"].size),
        bytes_moved=lambda x: 4.0 * x["x"].size,
        baseline_config={"acc": 1, "unroll": 1, "simd": False, "parallel": False, "schedule": "static"},
        transforms=(
            set_knob(Transform.SPLIT_REDUCTION, "acc", (4, 2, 8, 16, 1), requires=lambda c: c["unroll"] == 1),
            set_knob(Transform.UNROLL, "unroll", (4, 8, 1), requires=lambda c: c["acc"] == 1),
            turn_on(Transform.VECTORIZE, "simd"),
            parallelize(),
            schedule(),
        ),
        render={"c": render_c},
        inputs_at=inputs_at,
        instances=INSTANCES,
        sizes=lambda x: {"n": x["x"].size},
    )
