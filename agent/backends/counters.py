"""CPU counters for one kernel: derived roofline numbers plus cachegrind on the real compiled code.

Counter names are `CounterName` members (kernelgraph.client.signature), the names the signature
reads; cachegrind's raw events are kept too, prefixed `cg_`.
Cachegrind runs the kernel once on the very inputs that were timed (the task's full-size inputs of
the timed seed), with the thread count the timed run used, its outputs written just before the call as
the timing loop writes them, and a fixed cache model (32 KiB D1, 8 MiB LL, 64 B lines; so counters
compare across hosts). Valgrind runs a program's threads one at a time through one simulated cache, so
with several threads the counts are of the whole work through shared caches (docs/counter-signature.md).
The last-level data misses give the traffic past the LL (`ll_miss_bytes`) and the measured operational
intensity (`operational_intensity` = flops / ll_miss_bytes).
Simulation costs about CACHEGRIND_SLOWDOWN times the timed call's CPU time: when that would pass
CACHEGRIND_BUDGET_S, no cache counter is taken (the report says so and the source is `cpu_timing`),
rather than simulating another size whose cache regime may differ. Valgrind cannot decode AVX-512, so
v4/native kernels are counted from an x86-64-v3 build, labelled in `counter_build_isa`.
"""

from __future__ import annotations

import hashlib
import logging
import re
import shutil
import subprocess
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path

import numpy as np

from kernelgraph.agent.backends.bubblewrap import Mount, Rlimits, Sandbox, read_untrusted, scratch_dir
from kernelgraph.agent.targets import Target
from kernelgraph.agent.tasks.base import Arrays, Task
from kernelgraph.client.signature import CounterName, CounterSource

log = logging.getLogger(__name__)

# A fixed model (32 KiB 8-way L1s, 8 MiB 16-way LL, 64 B lines) instead of the host's CPUID.
CACHE_MODEL = ("--I1=32768,8,64", "--D1=32768,8,64", "--LL=8388608,16,64")
VALGRIND_UNSAFE_ISAS = {"x86-64-v4", "native"}
LINE_BYTES = 64  # the model's line: a last-level miss moves one line
# Cachegrind with cache simulation, build included, took 30-70x a timed call on this project's
# machine (measured: docs/counter-signature.md); the estimate takes a pessimistic factor.
CACHEGRIND_SLOWDOWN = 100.0
CACHEGRIND_BUDGET_S = 60.0  # estimated simulation time above which the timed size is not simulated


@dataclass(frozen=True)
class CounterReport:
    counters: dict[str, float]
    source: CounterSource  # CPU_CACHEGRIND, or CPU_TIMING when cachegrind could not run (see `note`)
    tool_versions: dict[str, str] = field(default_factory=dict)
    note: str = ""


def derived_counters(
    task: Task, inputs: Arrays, time_ns: float, threads: float, target: Target
) -> dict[str, float]:
    """time_ns, flops, bytes, gflops, gbps, arithmetic_intensity, threads and fractions of peaks."""
    flops, nbytes = float(task.flops(inputs)), float(task.bytes_moved(inputs))
    out: dict[str, float] = {
        CounterName.TIME_NS: float(time_ns),
        CounterName.FLOPS: flops,
        CounterName.BYTES: nbytes,
        CounterName.GFLOPS: flops / time_ns if time_ns > 0 else 0.0,
        CounterName.GBPS: nbytes / time_ns if time_ns > 0 else 0.0,
        CounterName.ARITHMETIC_INTENSITY: flops / nbytes if nbytes > 0 else 0.0,
        CounterName.THREADS: float(threads),
    }
    if target.peak_gflops:
        out[CounterName.COMPUTE_FRACTION_OF_PEAK] = out[CounterName.GFLOPS] / target.peak_gflops
    if target.peak_gbps:
        out[CounterName.MEMORY_FRACTION_OF_PEAK] = out[CounterName.GBPS] / target.peak_gbps
    return out


@cache
def valgrind_version() -> str:
    if shutil.which("valgrind") is None:
        return ""
    try:
        return subprocess.run(
            ["valgrind", "--version"], capture_output=True, text=True, timeout=10
        ).stdout.strip()
    except (OSError, subprocess.TimeoutExpired):
        return ""


def _ctype(dtype: np.dtype) -> str:
    return {"float32": "float", "int32": "int"}.get(str(dtype), "char")


def harness_source(task: Task, inputs: Arrays) -> str:
    """A main() that reads each input from argv files, allocates outputs, calls `kernel` once."""
    specs = task.output_shapes(inputs)
    sizes = list(task.sizes(inputs).values())
    params = [f"const {_ctype(a.dtype)}*" for a in inputs.values()]
    params += [f"{_ctype(np.dtype(task.output_dtype(n)))}*" for n in specs]
    params += ["int"] * len(sizes)
    lines = [
        "#include <stdio.h>\n#include <stdlib.h>\n#include <string.h>\n",
        f"void kernel({', '.join(params)});\n",
        'static void* load(const char* p, size_t n) { void* b = malloc(n ? n : 1); FILE* f = fopen(p, "rb");\n'
        "  if (!f || fread(b, 1, n, f) != n) { perror(p); exit(2); } fclose(f); return b; }\n",
        "int main(int argc, char** argv) {\n  (void)argc;\n",
    ]
    args = []
    for k, a in enumerate(inputs.values()):
        lines.append(f"  void* in{k} = load(argv[{k + 1}], {a.nbytes}u);\n")
        args.append(f"in{k}")
    for k, (name, shape) in enumerate(specs.items()):
        nbytes = int(np.prod(shape)) * np.dtype(task.output_dtype(name)).itemsize
        # Written just before the call, as the timing loop fills its outputs: the same cache state.
        lines.append(f"  void* out{k} = malloc({nbytes}u + 1); memset(out{k}, 0xff, {nbytes}u + 1);\n")
        args.append(f"out{k}")
    args += [str(int(s)) for s in sizes]
    lines.append(f"  kernel({', '.join(args)});\n  return 0;\n}}\n")
    return "".join(lines)


def parse_cachegrind(text: str, kernel_file: str) -> dict[str, float]:
    """Sum the event counts of every function in `kernel_file` (the kernel and its OpenMP outlines)."""
    events: list[str] = []
    totals: np.ndarray | None = None
    names: dict[str, str] = {}
    in_kernel = False
    for line in text.splitlines():
        if line.startswith("events:"):
            events = line.split()[1:]
            totals = np.zeros(len(events))
        elif line.startswith("fl="):
            ref = line[3:]
            m = re.match(r"\((\d+)\)\s*(.*)", ref)
            if m:
                if m.group(2):
                    names[m.group(1)] = m.group(2)
                ref = names.get(m.group(1), "")
            in_kernel = Path(ref).name == kernel_file
        elif line[:1].isdigit() and in_kernel and totals is not None:
            values = line.split()[1:]
            for k, v in enumerate(values[: len(events)]):
                totals[k] += float(v)
    if totals is None:
        raise ValueError("no events line in cachegrind output")
    return dict(zip(events, totals.tolist(), strict=True))


CACHEGRIND_TIMEOUT_S = 120.0
CACHEGRIND_LIMITS = Rlimits(address_space_bytes=16 << 30, cpu_seconds=int(2 * CACHEGRIND_TIMEOUT_S))


def cachegrind_counters(
    task: Task,
    source: str,
    target: Target,
    *,
    sandbox: Sandbox,
    inputs: Arrays,
    threads: int = 1,
    cpu_ns_per_call: float | None = None,
) -> CounterReport:
    """instructions, d1/ll miss rates, ll_miss_bytes, operational_intensity (+ raw events) from cachegrind
    on `inputs` (the timed ones) with `threads` OpenMP threads; never raises.

    The harness is built and run under valgrind inside `sandbox`, like every step that runs the kernel.
    `cpu_ns_per_call` (the timed call's process CPU time) sizes the simulation against the budget.
    """
    version = valgrind_version()
    if not version:
        return CounterReport(
            {}, CounterSource.CPU_TIMING, note="valgrind not installed: counters are timing-only"
        )
    if cpu_ns_per_call is not None:
        estimate_s = cpu_ns_per_call * CACHEGRIND_SLOWDOWN / 1e9
        if estimate_s > CACHEGRIND_BUDGET_S:
            return CounterReport(
                {},
                CounterSource.CPU_TIMING,
                note=f"cachegrind at the timed size would take about {estimate_s:.0f} s (budget "
                f"{CACHEGRIND_BUDGET_S:.0f} s): cache counters not measured",
            )
    build_isa = "x86-64-v3" if (target.isa or "") in VALGRIND_UNSAFE_ISAS else (target.isa or "x86-64-v2")
    threads = max(1, int(threads))
    try:
        with scratch_dir("kg-cachegrind-") as d:
            (d / "kernel.c").write_text(source)
            (d / "harness.c").write_text(harness_source(task, inputs))
            files = []
            for k, a in enumerate(inputs.values()):
                path = d / f"in{k}.bin"
                np.ascontiguousarray(a).tofile(path)
                files.append(str(path))
            build = ["gcc", "-O2", "-g", "-fopenmp", "-std=gnu11", f"-march={build_isa}", "harness.c",
                     "kernel.c", "-o", "harness", "-lm"]  # fmt: skip
            run = ["valgrind", "--tool=cachegrind", "--cache-sim=yes", *CACHE_MODEL,
                   "--cachegrind-out-file=cg.out", "./harness", *files]  # fmt: skip
            env = {"OMP_NUM_THREADS": str(threads), "OMP_WAIT_POLICY": "passive"}
            steps: tuple[tuple[str, list[str], dict[str, str]], ...] = (
                ("cachegrind build", build, {}),
                ("cachegrind", run, env),
            )
            for what, argv, step_env in steps:
                done = sandbox.run(argv, mounts=[Mount(d, writable=True)], env=step_env, cwd=d,
                                   limits=CACHEGRIND_LIMITS, timeout_s=CACHEGRIND_TIMEOUT_S)  # fmt: skip
                if done.timed_out or done.returncode != 0:
                    status = "timed out" if done.timed_out else "failed"
                    return CounterReport(
                        {}, CounterSource.CPU_TIMING, note=f"{what} {status}: {done.stderr[-300:]}"
                    )
            # read_untrusted: the harness ran the kernel, which could have planted a link here
            raw = parse_cachegrind(
                read_untrusted(d / "cg.out", 256 << 20).decode(errors="replace"), "kernel.c"
            )
    except (OSError, ValueError) as exc:
        return CounterReport({}, CounterSource.CPU_TIMING, note=f"cachegrind unavailable: {exc}")
    return CounterReport(
        _rates(raw, float(task.flops(inputs)), threads),
        CounterSource.CPU_CACHEGRIND,
        {"valgrind": version, "counter_build_isa": build_isa, "cache_model": " ".join(CACHE_MODEL)},
    )


def _rates(raw: Mapping[str, float], flops: float, threads: int) -> dict[str, float]:
    """The counters of one simulated call of the timed problem (so `counter_scale` is 1)."""
    g = raw.get
    data = g("Dr", 0.0) + g("Dw", 0.0)
    d1 = g("D1mr", 0.0) + g("D1mw", 0.0)
    ll = g("DLmr", 0.0) + g("DLmw", 0.0)
    out: dict[str, float] = {
        CounterName.INSTRUCTIONS: g("Ir", 0.0),
        CounterName.INSTRUCTIONS_MEASURED: g("Ir", 0.0),
        CounterName.COUNTER_SCALE: 1.0,
        CounterName.COUNTER_THREADS: float(threads),
        CounterName.D1_MISS_RATE: d1 / data if data else 0.0,
        # of the accesses that reach LL, the share that miss
        CounterName.LL_MISS_RATE: ll / d1 if d1 else 0.0,
        CounterName.LL_GLOBAL_MISS_RATE: ll / data if data else 0.0,
        CounterName.LL_MISS_BYTES: ll * LINE_BYTES,
    }
    if ll > 0:
        out[CounterName.OPERATIONAL_INTENSITY] = flops / (ll * LINE_BYTES)
    out.update({f"cg_{k}": v for k, v in raw.items()})
    return out


def source_digest(source: str) -> str:
    return hashlib.sha256(source.encode()).hexdigest()[:16]
