"""Inclusive prefix sum: a serial dependency chain that needs a two-pass algorithm to parallelize."""

from __future__ import annotations

import numpy as np

from kernelgraph.agent.tasks._common import (
    c_source,
    f32,
    parallelize,
    rng,
    set_knob,
    turn_on,
    unroll,
)
from kernelgraph.agent.tasks._define import define_task, dims, per_element, shaped_like, signed_wide_inputs
from kernelgraph.agent.tasks.base import Arrays, Config, Instance, LibraryCall, Shape, Task
from kernelgraph.agent.transforms import Transform

FULL, SMALL = 8 * 1024 * 1024, 50_001


def inputs_at(seed: int, shape: Shape) -> Arrays:
    return {"x": f32(rng(seed).uniform(-1, 1, shape))}


# 8 bytes an element (read x, write y): 65536 fits a 1 MiB L2, 2M (16 MB) leaves it.
INSTANCES = (Instance("65536", (65536,), "L2"), Instance("2097152", (2097152,), "LLC"))


def reference(inputs: Arrays) -> Arrays:
    return {"y": np.cumsum(inputs["x"].astype("f8")).astype("f4")}


def row_reference(inputs: Arrays, rows: np.ndarray) -> Arrays:
    """The prefix sums at positions `rows`: the float64 sums of the windows of x that end at them,
    accumulated (one pass over x, no temporary of its size)."""
    x = inputs["x"]
    ends = np.asarray(rows, dtype=np.int64) + 1
    starts = np.concatenate(([0], ends[:-1]))
    windows = np.array([x[a:b].sum(dtype=np.float64) for a, b in zip(starts, ends, strict=True)])
    return {"y": np.cumsum(windows).astype("f4")}


def _local_scan(config: Config, lo: str, hi: str, pad: str) -> str:
    """Scan x[lo:hi) into y, starting from double `s` (updated). With lanes > 1 each block of `lanes`
    values is scanned in float off the carried chain, so only one double add per block is serial."""
    lanes = int(config["lanes"])
    if lanes <= 1:
        return unroll(config) + f"{pad}for (long i = {lo}; i < {hi}; i++) {{ s += x[i]; y[i] = (float)s; }}\n"
    return (
        f"{pad}long i = {lo};\n" + unroll(config) + f"{pad}for (; i + {lanes} <= {hi}; i += {lanes}) {{\n"
        f"{pad}    float loc[{lanes}]; float p = 0.0f;\n"
        f"{pad}    for (int u = 0; u < {lanes}; u++) {{ p += x[i + u]; loc[u] = p; }}\n"
        f"{pad}    for (int u = 0; u < {lanes}; u++) y[i + u] = (float)(s + loc[u]);\n"
        f"{pad}    s += p;\n{pad}}}\n"
        f"{pad}for (; i < {hi}; i++) {{ s += x[i]; y[i] = (float)s; }}\n"
    )


def render_c(config: Config) -> str:
    if not config["parallel"]:
        body = "    double s = 0.0;\n" + _local_scan(config, "0", "n", "    ")
    else:
        block = int(config["block"]) or 0
        step = f"{block}L" if block else "(long)n"
        pad = "            "
        if config["fuse"]:
            # Reduce-then-scan: pass 1 only sums each slice (reads x), pass 2 scans from the right offset.
            passes = (
                f"{pad}double s = 0.0;\n"
                f"{pad}for (long i = lo; i < hi; i++) s += x[i];\n"
                f"{pad}sums[t] = s;\n{pad}#pragma omp barrier\n"
                f"{pad}s = carry;\n{pad}for (int k = 0; k < t; k++) s += sums[k];\n"
                + "            {\n"
                + _local_scan(config, "lo", "hi", pad + "    ")
                + "            }\n"
            )
        else:
            # Scan-then-add: each thread scans its slice, then adds the sums of the slices before it.
            passes = (
                f"{pad}double s = 0.0;\n            {{\n"
                + _local_scan(config, "lo", "hi", pad + "    ")
                + "            }\n"
                f"{pad}sums[t] = s;\n{pad}#pragma omp barrier\n"
                f"{pad}double off = carry;\n{pad}for (int k = 0; k < t; k++) off += sums[k];\n"
                f"{pad}if (t > 0 || carry != 0.0) for (long i = lo; i < hi; i++) y[i] = (float)(y[i] + off);\n"
            )
        body = (
            "    double carry = 0.0;\n    double sums[257];\n"
            f"    for (long start = 0; start < n; start += {step}) {{\n"
            f"        long len = n - start < {step} ? n - start : {step};\n"
            "        #pragma omp parallel\n        {\n"
            "            int t = omp_get_thread_num(), T = omp_get_num_threads();\n"
            "            if (T > 256) T = 256;\n"
            "            long lo = t < T ? start + len * t / T : start + len, hi = t < T ? start + len * (t + 1) / T : lo;\n"
            + passes
            + "            #pragma omp barrier\n"
            "            #pragma omp single\n            { for (int k = 0; k < T; k++) carry += sums[k]; }\n"
            "        }\n    }\n"
        )
    return c_source("scan", config, "const float* restrict x, float* restrict y, int n", body)


def error_scale(inputs: Arrays) -> dict[str, np.ndarray]:
    return {"y": np.cumsum(np.abs(inputs["x"].astype("f8")))}


LIBRARY = LibraryCall(
    numpy=lambda x: {"y": np.cumsum(x["x"])},
    numpy_call="np.cumsum(x)",
    torch=lambda torch, x: {"y": torch.cumsum(x["x"], dim=0)},
    torch_call="torch.cumsum(x, dim=0)",
)


def task() -> Task:
    return define_task(
        name="prefix_scan",
        family="scan",
        patterns=("scan", "contiguous-stream", "loop-carried-dependency"),
        description="Inclusive prefix sum of 8M fp32 values (small 50001).",
        inputs_at=inputs_at,
        small=(SMALL,),
        full=(FULL,),
        output_shapes=shaped_like("x", "y"),
        reference=reference,
        row_reference=row_reference,
        edge_inputs=signed_wide_inputs("x"),  # prefix sums that cancel to near zero
        error_scale=error_scale,
        library=LIBRARY,
        flops=per_element("x", 1.0),
        bytes_moved=per_element("x", 8.0),
        sizes=dims("x", "n"),
        baseline_config={"parallel": False, "block": 0, "fuse": False, "lanes": 1, "unroll": 1},
        transforms=(
            parallelize(),
            set_knob(
                Transform.BLOCK_FOR_CACHE,
                "block",
                (65536, 4096, 1 << 20, 0),
                requires=lambda c: bool(c["parallel"]),
            ),
            turn_on(Transform.FUSE, "fuse", requires=lambda c: bool(c["parallel"])),
            set_knob(Transform.SPLIT_REDUCTION, "lanes", (8, 4, 16, 1)),
            set_knob(Transform.UNROLL, "unroll", (4, 8, 1)),
        ),
        render_c=render_c,
        instances=INSTANCES,
    )
