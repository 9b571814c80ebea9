"""Full sum reduction of a long fp32 vector (accumulated in double so every variant is exact enough)."""

from __future__ import annotations

import numpy as np

from kernelgraph.agent.tasks._common import (
    c_source,
    f32,
    par_simd,
    parallelize,
    rng,
    schedule,
    set_knob,
    split_sum,
    turn_on,
    vloop,
)
from kernelgraph.agent.tasks._define import define_task, dims, per_element, signed_wide_inputs
from kernelgraph.agent.tasks.base import Arrays, Config, Instance, LibraryCall, Shape, Task
from kernelgraph.agent.transforms import Transform

FULL, SMALL = 8 * 1024 * 1024, 100_003


def inputs_at(seed: int, shape: Shape) -> Arrays:
    return {"x": f32(rng(seed).uniform(-1, 1, shape))}


def reference(inputs: Arrays) -> Arrays:
    # float64 accumulation of the float32 values, buffered: no float64 copy of x
    return {"out": np.array([inputs["x"].sum(dtype=np.float64)], dtype="f4")}


def render_c(config: Config) -> str:
    acc = int(config["acc"])
    if acc > 1:
        body = split_sum(
            config,
            "s",
            acc,
            lambda i: f"x[{i}]",
            index="i",
            lo="0",
            hi="n",
            end="long m",
            ctype="double",
            pragma=par_simd,
            pad="    ",
        )
    else:
        body = "    double s = 0.0;\n" + vloop(
            config, "i", "0", "n", "s += x[i];", reduction="+:s", parallel=bool(config["parallel"])
        )
    return c_source(
        "reduction",
        config,
        "const float* restrict x, float* restrict out, int n",
        body + "    out[0] = (float)s;\n",
    )


INSTANCES = (
    Instance("8192", (8192,), "L1"),
    Instance("262144", (262144,), "L2"),
    Instance("2097152", (2097152,), "LLC"),
)


def error_scale(inputs: Arrays) -> dict[str, np.ndarray]:
    return {"out": np.abs(inputs["x"].astype("f8")).sum(keepdims=True)}


LIBRARY = LibraryCall(
    numpy=lambda x: {"out": x["x"].sum()},
    numpy_call="x.sum()",
    torch=lambda torch, x: {"out": x["x"].sum()},
    torch_call="x.sum()",
)


def task() -> Task:
    return define_task(
        name="reduction",
        family="reduction",
        patterns=("full-reduction", "contiguous-stream"),
        description="Sum of 8M fp32 values into one scalar (small 100003).",
        inputs_at=inputs_at,
        small=(SMALL,),
        full=(FULL,),
        output_shapes=lambda x: {"out": (1,)},
        reference=reference,
        edge_inputs=signed_wide_inputs("x"),  # a sum that cancels to near zero
        error_scale=error_scale,
        library=LIBRARY,
        flops=per_element("x", 1.0),
        bytes_moved=per_element("x", 4.0),
        sizes=dims("x", "n"),
        baseline_config={"acc": 1, "unroll": 1, "simd": False, "parallel": False, "schedule": "static"},
        transforms=(
            set_knob(Transform.SPLIT_REDUCTION, "acc", (4, 2, 8, 16, 1), requires=lambda c: c["unroll"] == 1),
            set_knob(Transform.UNROLL, "unroll", (4, 8, 1), requires=lambda c: c["acc"] == 1),
            turn_on(Transform.VECTORIZE, "simd"),
            parallelize(),
            schedule(),
        ),
        render_c=render_c,
        instances=INSTANCES,
    )
