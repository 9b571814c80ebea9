"""CPU counters for one kernel: derived roofline numbers plus cachegrind on the real compiled code.

Counter names are `CounterName` members (kernelgraph.core.signature), the names the signature
reads; cachegrind's raw events are kept too, prefixed `cg_`.
Cachegrind runs the kernel once on the very inputs that were timed (the task's full-size inputs of
the timed seed), with the thread count the timed run used, its outputs written just before the call as
the timing loop writes them, and the host's own caches as cachegrind can model them
(`host_cache_model`: the L1d as D1, the last level the host reports as LL, each the nearest geometry
with a power-of-two set count; recorded with every measurement as `cache_*` counters).
The counted program is the evaluator's own harness linked against the admitted, timed `kernel.so`
itself: the same machine code, never a rebuild of the source (a rebuild has other predefined macros,
`__PIE__` among them, that a kernel can tell apart). The counts are the whole process's events of a
run that calls the kernel minus those of the same harness that does not (so they cover the kernel, its
OpenMP runtime and the libm it calls, and no debug information the kernel wrote can move them
elsewhere); the counted call's outputs are checked against the reference like any other call. Valgrind runs a program's threads one at a time through one simulated cache, so
with several threads the counts are of the whole work through shared caches (docs/counter-signature.md).
The last-level data misses give the traffic past the LL (`ll_miss_bytes`) and the measured operational
intensity (`operational_intensity` = flops / ll_miss_bytes).
Simulation costs about CACHEGRIND_SLOWDOWN times the timed call's CPU time: when that would pass
CACHEGRIND_BUDGET_S, no cache counter is taken (the report says so and the source is `cpu_timing`),
rather than simulating another size whose cache regime may differ. Valgrind (3.19) cannot decode
AVX-512: an admitted object that uses it dies under cachegrind, and then no cache counter is stored
(`cpu_timing`, the note names the signature dimensions left unmeasured), never another build's.
"""

from __future__ import annotations

import hashlib
import logging
import math
import re
import shutil
import subprocess
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path

import numpy as np

from kernelgraph.agent.backends.bubblewrap import Mount, Rlimits, Sandbox, read_untrusted, scratch_dir
from kernelgraph.agent.evaluator import compare
from kernelgraph.agent.targets import SYSFS_CACHES, Target, sysfs_caches
from kernelgraph.agent.tasks.base import Arrays, Task
from kernelgraph.core.signature import SOURCE_DIMENSIONS, CounterName, CounterSource

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class CacheGeometry:
    size_bytes: int
    ways: int
    line_bytes: int

    @property
    def option(self) -> str:
        return f"{self.size_bytes},{self.ways},{self.line_bytes}"


@dataclass(frozen=True)
class CacheModel:
    """The two-level hierarchy cachegrind simulates (plus the I1 it requires), and where it came from."""

    i1: CacheGeometry
    d1: CacheGeometry
    ll: CacheGeometry
    origin: str  # "host" (read from sysfs) or "fallback" (sysfs said nothing usable)
    ll_level: int  # the host level LL stands for (0 for the fallback)

    @property
    def options(self) -> tuple[str, ...]:
        return (f"--I1={self.i1.option}", f"--D1={self.d1.option}", f"--LL={self.ll.option}")

    @property
    def description(self) -> str:
        level = f"L{self.ll_level}" if self.ll_level else "valgrind's default"
        return f"{self.origin} ({level} as LL): {' '.join(self.options)}"

    def counters(self) -> dict[str, float]:
        """The model, kept with the measurement's counters (so re-signing can tell what was simulated)."""
        return {
            CounterName.CACHE_D1_BYTES: float(self.d1.size_bytes),
            CounterName.CACHE_D1_WAYS: float(self.d1.ways),
            CounterName.CACHE_LL_BYTES: float(self.ll.size_bytes),
            CounterName.CACHE_LL_WAYS: float(self.ll.ways),
            CounterName.CACHE_LINE_BYTES: float(self.d1.line_bytes),
            CounterName.CACHE_LL_LEVEL: float(self.ll_level),
        }


# Valgrind's own default, used where the host's caches cannot be read (32 KiB 8-way L1s, 8 MiB 16-way LL).
FALLBACK_CACHE_MODEL = CacheModel(
    CacheGeometry(32768, 8, 64), CacheGeometry(32768, 8, 64), CacheGeometry(8 << 20, 16, 64), "fallback", 0
)


def nearest_valid_geometry(size_bytes: int, ways: int, line_bytes: int) -> CacheGeometry:
    """The cachegrind geometry nearest to a real cache: cachegrind accepts only a power-of-two number of
    sets (size / (ways x line)) and line. The size is kept exactly when some associativity within a
    factor 2 of the real one gives a power-of-two set count (the closest such); otherwise the
    associativity is kept and the set count rounded to the nearest power of two (in log terms)."""
    if size_bytes <= 0 or ways <= 0 or not _pow2(line_bytes):
        raise ValueError(f"no cache geometry for {size_bytes} B, {ways} ways, {line_bytes} B lines")
    lines = max(1, size_bytes // line_bytes)
    fits = [w for w in range(max(1, ways // 2), 2 * ways + 1) if lines % w == 0 and _pow2(lines // w)]
    if fits:
        return CacheGeometry(lines * line_bytes, min(fits, key=lambda w: (abs(w - ways), w)), line_bytes)
    sets = 2 ** round(math.log2(max(1.0, lines / ways)))
    return CacheGeometry(sets * ways * line_bytes, ways, line_bytes)


def _pow2(n: int) -> bool:
    return n > 0 and n & (n - 1) == 0


def _read_cache_levels(root: Path) -> dict[tuple[str, int], CacheGeometry]:
    """(type, level) -> the real geometry of each of cpu0's caches that sysfs describes in full."""
    return {(c.kind, c.level): CacheGeometry(c.size_bytes, c.ways, c.line_bytes)
            for c in sysfs_caches(root)
            if c.size_bytes > 0 and c.ways and c.ways > 0 and c.line_bytes and _pow2(c.line_bytes)}  # fmt: skip


def host_cache_model(root: Path = SYSFS_CACHES) -> CacheModel:
    """The host's caches as a cachegrind model. D1 is the level-1 data cache. LL is the *last* level
    the host reports (its L3 where there is one), because the signature's ridge position sets the
    traffic past LL against the target's DRAM bandwidth: what misses LL must be what goes to memory.
    The levels between (a private L2) are not simulated: cachegrind has two. Where sysfs lacks L1d,
    L1i or a level past 1, valgrind's own default model is used (origin "fallback")."""
    found = _read_cache_levels(root)
    data = {level: g for (kind, level), g in found.items() if kind in ("Data", "Unified")}
    instruction = found.get(("Instruction", 1)) or found.get(("Unified", 1))
    if 1 not in data or instruction is None or max(data) < 2:
        return FALLBACK_CACHE_MODEL
    ll_level = max(data)

    def valid(g: CacheGeometry) -> CacheGeometry:
        return nearest_valid_geometry(g.size_bytes, g.ways, g.line_bytes)

    return CacheModel(valid(instruction), valid(data[1]), valid(data[ll_level]), "host", ll_level)


@cache
def this_host_cache_model() -> CacheModel:
    return host_cache_model()


# The signature dimensions only cache counters give: what a `cpu_timing` measurement leaves unmeasured.
CACHE_DIMENSIONS = tuple(
    d
    for d in SOURCE_DIMENSIONS[CounterSource.CPU_CACHEGRIND]
    if d not in SOURCE_DIMENSIONS[CounterSource.CPU_TIMING]
)
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
    # Set when the counted call's outputs were wrong: a kernel that behaves otherwise under valgrind.
    incorrect: str = ""


def without_cache_counters(note: str) -> CounterReport:
    """No cache counter measured: the report says why and which signature dimensions are missing."""
    return CounterReport(
        {}, CounterSource.CPU_TIMING, note=f"{note}; missing dimensions: {', '.join(CACHE_DIMENSIONS)}"
    )


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
    """A main() that reads each input from argv files, allocates outputs and, when argv[1] is "call",
    calls `kernel` once and writes each output to out<k>.bin (argv[1] "skip": everything but the call,
    the baseline whose events are subtracted)."""
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
        'static void save(const char* p, const void* b, size_t n) { FILE* f = fopen(p, "wb");\n'
        "  if (!f || fwrite(b, 1, n, f) != n || fclose(f)) { perror(p); exit(3); } }\n",
        "int main(int argc, char** argv) {\n  (void)argc;\n",
    ]
    args = []
    for k, a in enumerate(inputs.values()):
        lines.append(f"  void* in{k} = load(argv[{k + 2}], {a.nbytes}u);\n")
        args.append(f"in{k}")
    saves = []
    for k, (name, shape) in enumerate(specs.items()):
        nbytes = int(np.prod(shape)) * np.dtype(task.output_dtype(name)).itemsize
        # Written just before the call, as the timing loop fills its outputs: the same cache state.
        lines.append(f"  void* out{k} = malloc({nbytes}u + 1); memset(out{k}, 0xff, {nbytes}u + 1);\n")
        args.append(f"out{k}")
        saves.append(f'save("out{k}.bin", out{k}, {nbytes}u); ')
    args += [str(int(s)) for s in sizes]
    lines.append(f'  if (strcmp(argv[1], "call") == 0) {{ kernel({", ".join(args)}); {"".join(saves)}}}\n')
    lines.append("  return 0;\n}\n")
    return "".join(lines)


def parse_cachegrind_summary(text: str) -> dict[str, float]:
    """The whole program's event totals (cachegrind's `summary:` line), keyed by the `events:` names."""
    events: list[str] = []
    for line in text.splitlines():
        if line.startswith("events:"):
            events = line.split()[1:]
        elif line.startswith("summary:") and events:
            values = [float(v) for v in line.split()[1:]]
            if len(values) != len(events):
                raise ValueError("cachegrind summary and events lines differ in length")
            return dict(zip(events, values, strict=True))
    raise ValueError("no events and summary lines in cachegrind output")


# Valgrind's own summary on its log (stderr), e.g. "==12== D1  misses:  1,433  ( 1,104 rd + 329 wr)":
# written through a descriptor valgrind keeps from the program, after the program's last
# instruction. The kernel runs in the counted process and can write any file valgrind can (the out
# file included: results/redteam-stop25/a09); the log line it cannot suppress, so the file's totals
# must be the log's. Each (name, kind) gives the out file's events: one total, or rd + wr.
_LOG_LINE = re.compile(
    r"^==\d+== (I|I1|LLi|D|D1|LLd)\s+(refs|misses):\s+([\d,]+)(?:\s+\(\s*([\d,]+) rd\s+\+\s+([\d,]+) wr\))?\s*$",
    re.M,
)
_LOG_EVENTS = {("I", "refs"): ("Ir",), ("I1", "misses"): ("I1mr",), ("LLi", "misses"): ("ILmr",),
               ("D", "refs"): ("Dr", "Dw"), ("D1", "misses"): ("D1mr", "D1mw"),
               ("LLd", "misses"): ("DLmr", "DLmw")}  # fmt: skip


def summary_disagreement(totals: Mapping[str, float], log: str) -> str:
    """Why the out file's `totals` are not those valgrind printed on its `log` ("" when they are):
    a summary line given twice (the program wrote one), one missing for an event the file has, or a
    different count."""
    seen: dict[str, float] = {}
    for m in _LOG_LINE.finditer(log):
        events = _LOG_EVENTS[(m[1], m[2])]
        if len(events) == 2 and m[4] is None:
            return f"valgrind's {m[1]} {m[2]} line has no rd + wr split"
        for event, value in zip(events, [m[4], m[5]] if len(events) == 2 else [m[3]], strict=True):
            if event in seen:
                return f"valgrind's log holds two {m[1]} {m[2]} lines"
            seen[event] = float(value.replace(",", ""))
    for event in (e for group in _LOG_EVENTS.values() for e in group if e in totals):
        if event not in seen:
            return f"{event} in the file, not on valgrind's log"
        if totals[event] != seen[event]:
            return f"{event} {totals[event]:.0f} in the file, {seen[event]:.0f} on valgrind's log"
    return ""


CACHEGRIND_TIMEOUT_S = 120.0
CACHEGRIND_LIMITS = Rlimits(address_space_bytes=16 << 30, cpu_seconds=int(2 * CACHEGRIND_TIMEOUT_S))


def cachegrind_counters(
    task: Task,
    artifact: str,
    *,
    sandbox: Sandbox,
    inputs: Arrays,
    threads: int = 1,
    cpu_ns_per_call: float | None = None,
    model: CacheModel | None = None,
) -> CounterReport:
    """instructions, d1/ll miss rates, ll_miss_bytes, operational_intensity (+ raw events) from cachegrind
    on `inputs` (the timed ones) with `threads` OpenMP threads, of the admitted shared object `artifact`
    (the one that was timed); never raises.

    The harness is built and run under valgrind inside `sandbox`, like every step that runs the kernel.
    `cpu_ns_per_call` (the timed call's process CPU time) sizes the simulation against the budget;
    `model` is the simulated hierarchy (default: this host's, `host_cache_model`).
    """
    model = model or this_host_cache_model()
    version = valgrind_version()
    if not version:
        return without_cache_counters("valgrind not installed: counters are timing-only")
    if cpu_ns_per_call is not None:
        estimate_s = cpu_ns_per_call * CACHEGRIND_SLOWDOWN / 1e9
        if estimate_s > CACHEGRIND_BUDGET_S:
            return without_cache_counters(
                f"cachegrind at the timed size would take about {estimate_s:.0f} s (budget "
                f"{CACHEGRIND_BUDGET_S:.0f} s): cache counters not measured"
            )
    threads = max(1, int(threads))
    so = Path(artifact).resolve()
    try:
        with scratch_dir("kg-cachegrind-") as d:
            (d / "harness.c").write_text(harness_source(task, inputs))
            files = []
            for k, a in enumerate(inputs.values()):
                path = d / f"in{k}.bin"
                np.ascontiguousarray(a).tofile(path)
                files.append(str(path))
            # Our harness (trusted code) linked to the admitted object by its path, which the sandbox
            # binds read-only at the same place.
            build = ["gcc", "-O1", "-std=gnu11", "harness.c", str(so), f"-Wl,-rpath,{so.parent}", "-o",
                     "harness"]  # fmt: skip
            env = {"OMP_NUM_THREADS": str(threads), "OMP_WAIT_POLICY": "passive"}
            mounts = [Mount(d, writable=True), Mount(so.parent)]
            done = sandbox.run(build, mounts=mounts, env={}, cwd=d, limits=CACHEGRIND_LIMITS,
                               timeout_s=CACHEGRIND_TIMEOUT_S)  # fmt: skip
            if done.timed_out or done.returncode != 0:
                return without_cache_counters(f"cachegrind harness build failed: {done.stderr[-300:]}")
            totals = {}
            for mode in ("skip", "call"):
                run = ["valgrind", "--tool=cachegrind", "--cache-sim=yes", *model.options,
                       f"--cachegrind-out-file=cg.{mode}", "./harness", mode, *files]  # fmt: skip
                done = sandbox.run(run, mounts=mounts, env=env, cwd=d, limits=CACHEGRIND_LIMITS,
                                   timeout_s=CACHEGRIND_TIMEOUT_S)  # fmt: skip
                if done.timed_out or done.returncode != 0:
                    status = "timed out" if done.timed_out else "failed"
                    undecodable = "unhandled instruction" in done.stderr or "SIGILL" in done.stderr
                    why = (f"valgrind ({version}) cannot run the admitted object (AVX-512?)" if undecodable
                           else f"cachegrind {status}: {done.stderr[-300:]}")  # fmt: skip
                    return without_cache_counters(why)
                # read_untrusted: the harness ran the kernel, which could have planted a link here
                totals[mode] = parse_cachegrind_summary(
                    read_untrusted(d / f"cg.{mode}", 256 << 20).decode(errors="replace")
                )
                if not _LOG_LINE.search(done.stderr):  # another valgrind's format: nothing to confirm
                    return without_cache_counters(
                        "valgrind printed no summary on its log to check the file by"
                    )
                forged = summary_disagreement(totals[mode], done.stderr)
                if forged:
                    why = (
                        f"the counted run's cachegrind file is not valgrind's ({forged}): the kernel wrote it"
                    )
                    return CounterReport({}, CounterSource.CPU_TIMING, note=why, incorrect=why)
            incorrect = _check_counted_outputs(task, inputs, d)
            if incorrect:
                return CounterReport({}, CounterSource.CPU_TIMING, note=incorrect, incorrect=incorrect)
    except (OSError, ValueError) as exc:
        return without_cache_counters(f"cachegrind unavailable: {exc}")
    raw = {k: max(0.0, totals["call"][k] - totals["skip"].get(k, 0.0)) for k in totals["call"]}
    return CounterReport(
        {**_rates(raw, float(task.flops(inputs)), threads, model.d1.line_bytes), **model.counters()},
        CounterSource.CPU_CACHEGRIND,
        {"valgrind": version, "counted_object": "admitted", "cache_model": model.description},
    )


def _check_counted_outputs(task: Task, inputs: Arrays, directory: Path) -> str:
    """Why the counted call's outputs are wrong ("" when they are right)."""
    want = task.reference(inputs)
    for k, (name, shape) in enumerate(task.output_shapes(inputs).items()):
        dtype = np.dtype(task.output_dtype(name))
        data = read_untrusted(directory / f"out{k}.bin", int(np.prod(shape)) * dtype.itemsize)
        got = np.frombuffer(data, dtype=dtype)
        if got.size != int(np.prod(shape)):
            return f"the counted call left output {name!r} incomplete"
        ok, reason, _ = compare(task, name, got.reshape(shape), np.asarray(want[name]), inputs)
        if not ok:
            return f"the call counted under cachegrind is incorrect: {reason}"
    return ""


def _rates(raw: Mapping[str, float], flops: float, threads: int, line_bytes: int) -> dict[str, float]:
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
        CounterName.LL_MISS_RATE: min(1.0, ll / d1) if d1 else 0.0,  # two runs subtracted: 1 + noise
        CounterName.LL_GLOBAL_MISS_RATE: ll / data if data else 0.0,
        CounterName.LL_MISS_BYTES: ll * line_bytes,
    }
    if ll > 0:
        out[CounterName.OPERATIONAL_INTENSITY] = flops / (ll * line_bytes)
    out.update({f"cg_{k}": v for k, v in raw.items()})
    return out


def source_digest(source: str) -> str:
    return hashlib.sha256(source.encode()).hexdigest()[:16]
