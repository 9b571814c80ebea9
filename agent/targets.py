"""Compilation targets: CPU march levels now, CUDA architectures later, one dataclass for both.

Peaks come from probes run once per host and are cached as JSON under the data home, keyed by host
identity, because a roofline fraction is only meaningful against what this machine actually reaches:
an FMA-throughput loop per march level (12 independent chains at the level's full vector width, on
every core) and a streaming read/copy/fill at each cache level and memory, with working sets sized
from the caches sysfs reports (/sys/devices/system/cpu/cpu0/cache). Every figure is an upper bound
(`_upper_bound`); tests/agent/test_peaks.py checks that OpenBLAS's sgemm and a numpy copy stay below.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import platform
import subprocess
import tempfile
import time
from dataclasses import dataclass, replace
from functools import cache
from pathlib import Path
from typing import Any

from kernelgraph.agent.target import Target, UnknownTargetError
from kernelgraph.agent.targets_cuda import CUDA_TARGETS, cuda_target_names
from kernelgraph.core.settings import get_settings

__all__ = ["Target", "UnknownTargetError", "all_targets", "default_target", "get_target", "target_names"]

log = logging.getLogger(__name__)

PEAKS_FILE = "peaks.json"
# 2: FMA probes with 12 register-resident chains, per-level streaming bandwidth from sysfs cache
#    sizes, every figure an upper bound (the larger of all cores' and one core's x cores).
# 3: rates over each thread's CPU time, so that a busy machine cannot read them low.
# 4: the streaming probe also times libc's memcpy and memset, whose non-temporal stores beat plain
#    stores past the caches (a 1 GiB numpy copy ran at 40.6 GB/s against a 39.9 GB/s probe-3 figure).
PROBE_VERSION = 4


# name -> (march, vector width in fp32 lanes, cpuinfo flags the level needs)
_V2 = frozenset({"sse4_2", "ssse3", "popcnt", "cx16", "sse4_1"})
_V3 = _V2 | {"avx", "avx2", "fma", "bmi1", "bmi2", "movbe", "f16c", "abm"}
_V4 = _V3 | {"avx512f", "avx512bw", "avx512cd", "avx512dq", "avx512vl"}
CPU_LEVELS: dict[str, tuple[str, int, frozenset[str]]] = {
    "cpu-x86-64-v2": ("x86-64-v2", 4, _V2),
    "cpu-x86-64-v3": ("x86-64-v3", 8, _V3),
    "cpu-x86-64-v4": ("x86-64-v4", 16, _V4),
    "cpu-native": ("native", 0, frozenset()),
}


def data_home() -> Path:
    """The settings' data home (KERNELGRAPH_DATA_HOME or .env), where measured peaks are cached."""
    return get_settings().home


def host_cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - non-Linux
        return os.cpu_count() or 1


@cache
def _cpuinfo() -> tuple[str, frozenset[str]]:
    model, flags = platform.processor() or "unknown", frozenset[str]()
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        return model, flags
    for line in text.splitlines():
        key, _, value = line.partition(":")
        if key.strip() == "model name" and model in ("unknown", "", platform.processor()):
            model = value.strip()
        elif key.strip() == "flags" and not flags:
            flags = frozenset(value.split())
    return model, flags


def host_identity() -> str:
    """hostname + CPU model + core count: the key peaks are cached under."""
    model, _ = _cpuinfo()
    return f"{platform.node()}|{model}|{host_cores()}"


def _native_width(flags: frozenset[str]) -> int:
    return 16 if "avx512f" in flags else 8 if "avx2" in flags else 4


def _availability(name: str) -> tuple[bool, str]:
    march, _, needs = CPU_LEVELS[name]
    if platform.machine() not in ("x86_64", "AMD64"):
        return False, f"host is {platform.machine()}, not x86-64"
    _, flags = _cpuinfo()
    missing = sorted(needs - flags)
    if missing:
        return False, f"host CPU lacks {', '.join(missing)} needed by -march={march}"
    return True, ""


# FMA throughput: 12 independent accumulators at full vector width (more than FMA latency x FMA pipes,
# so the pipes never wait on a result), the multiplier hidden from the optimiser so nothing is folded
# away. x86-64-v2 has no FMA: there each step is a multiply and an add, 2 FLOPs all the same. Both
# probes divide each thread's work by that thread's own CPU time (CLOCK_THREAD_CPUTIME_ID) and add the
# threads' rates: time the thread spent preempted by other work is not counted, so a busy machine
# cannot pull the figure down (seen before this: 12.6 GFLOP/s for v2 at load 20 against 124 quiet).
_FMA_C = r"""
#include <stdio.h>
#include <time.h>
#include <omp.h>
typedef float vf __attribute__((vector_size(WIDTH * 4)));
#define S(j) acc##j = acc##j * m + a;
static double cpu_now(void) { struct timespec t; clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t); return t.tv_sec + 1e-9 * t.tv_nsec; }
int main(void) {
    const long iters = 2000000L * 16 / WIDTH;
    double best = 0.0, total = 0.0;
    for (int r = 0; r < REPS; r++) {
        double rate = 0.0;
        #pragma omp parallel reduction(+:total, rate)
        {
            vf m, a; float s = (float)omp_get_thread_num();
            for (int k = 0; k < WIDTH; k++) { m[k] = 0.999999f; a[k] = 1e-7f; }
            vf acc0 = m * s, acc1 = m * (s + 1), acc2 = m * (s + 2), acc3 = m * (s + 3), acc4 = m * (s + 4),
               acc5 = m * (s + 5), acc6 = m * (s + 6), acc7 = m * (s + 7), acc8 = m * (s + 8),
               acc9 = m * (s + 9), acc10 = m * (s + 10), acc11 = m * (s + 11);
            double c0 = cpu_now();
            for (long i = 0; i < iters; i++) {
                __asm__ volatile("" : "+x"(m));
                S(0) S(1) S(2) S(3) S(4) S(5) S(6) S(7) S(8) S(9) S(10) S(11)
            }
            rate += 2.0 * 12 * WIDTH * iters / (cpu_now() - c0) / 1e9;
            vf sum = acc0 + acc1 + acc2 + acc3 + acc4 + acc5 + acc6 + acc7 + acc8 + acc9 + acc10 + acc11;
            for (int k = 0; k < WIDTH; k++) total += sum[k];
        }
        if (rate > best) best = rate;
    }
    printf("%f %f\n", best, total);
    return 0;
}
"""

# Streaming bandwidth at one working set (argv[1] bytes per thread): the best of a read (eight
# independent vector sums), a copy and a fill by plain stores, and libc's memcpy and memset (which use
# non-temporal stores on large buffers: no write-allocate read, so they stream faster than any plain
# store loop past the caches; a numpy copy is a memcpy), each thread on its own buffers, its rate over
# its own CPU time (as above). Bytes are counted as the tasks count theirs (compulsory: a copy's reads
# plus its writes, no write-allocate).
_STREAM_C = r"""
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <omp.h>
typedef float vf __attribute__((vector_size(WIDTH * 4), aligned(64)));
static double cpu_now(void) { struct timespec t; clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t); return t.tv_sec + 1e-9 * t.tv_nsec; }
int main(int argc, char** argv) {
    long ws = atol(argv[1]), stream = atol(argv[2]);
    long nv = ws / (long)sizeof(vf); nv -= nv % 16; if (nv < 16) nv = 16;
    long passes = stream / (nv * (long)sizeof(vf)); if (passes < 1) passes = 1;
    double best = 0.0, rate = 0.0, best_wall = 0.0, wall = 0.0, moved = 0.0; float sink = 0.0f;
    #pragma omp parallel reduction(+:sink)
    {
        vf* a = aligned_alloc(64, nv * sizeof(vf)); vf* b = aligned_alloc(64, nv / 2 * sizeof(vf));
        for (long i = 0; i < nv; i++) for (int k = 0; k < WIDTH; k++) { a[i][k] = 1.0f; if (i < nv / 2) b[i][k] = 2.0f; }
        for (int r = 0; r < REPS; r++) for (int kind = 0; kind < 5; kind++) {
            int copy = kind == 1 || kind == 3;
            long n = copy ? nv / 2 : nv; /* a copy's source and destination share the set */
            n -= n % 16;
            #pragma omp barrier
            #pragma omp single
            { rate = 0.0; moved = 0.0; wall = omp_get_wtime(); }
            double t = cpu_now();
            if (kind == 0) {
                vf s0 = {0}, s1 = {0}, s2 = {0}, s3 = {0}, s4 = {0}, s5 = {0}, s6 = {0}, s7 = {0};
                for (long p = 0; p < passes; p++) {
                    __asm__ volatile("" ::: "memory");
                    for (long i = 0; i < n; i += 8) {
                        s0 += a[i]; s1 += a[i + 1]; s2 += a[i + 2]; s3 += a[i + 3];
                        s4 += a[i + 4]; s5 += a[i + 5]; s6 += a[i + 6]; s7 += a[i + 7];
                    }
                }
                vf s = s0 + s1 + s2 + s3 + s4 + s5 + s6 + s7; sink += s[0];
            } else if (kind == 1) {
                for (long p = 0; p < passes; p++) {
                    __asm__ volatile("" ::: "memory");
                    for (long i = 0; i < n; i++) b[i] = a[i];
                }
                sink += b[n / 2][0];
            } else if (kind == 3) {
                for (long p = 0; p < passes; p++) {
                    __asm__ volatile("" ::: "memory");
                    memcpy(b, a, n * sizeof(vf));
                }
                sink += b[n / 3][0];
            } else if (kind == 4) {
                for (long p = 0; p < passes; p++) {
                    __asm__ volatile("" ::: "memory");
                    memset(a, p & 1, n * sizeof(vf));
                }
                sink += a[n / 5][0];
            } else {
                vf v = {0}; v[0] = (float)r;
                for (long p = 0; p < passes; p++) {
                    __asm__ volatile("" : "+x"(v) :: "memory");
                    for (long i = 0; i < n; i++) a[i] = v;
                }
                sink += a[n / 3][0];
            }
            t = cpu_now() - t;
            double mine = (double)passes * n * sizeof(vf) * (copy ? 2 : 1);
            #pragma omp atomic
            rate += mine / t / 1e9;
            #pragma omp atomic
            moved += mine;
            #pragma omp barrier
            #pragma omp master
            {
                wall = omp_get_wtime() - wall;
                if (rate > best) best = rate;
                if (moved / wall / 1e9 > best_wall) best_wall = moved / wall / 1e9;
            }
        }
        free(a); free(b);
    }
    printf("%f %f %f\n", best, best_wall, sink);
    return 0;
}
"""

# The levels peaks are measured at, fastest first; `memory` is what `Target.peak_gbps` reports.
MEMORY_LEVELS: tuple[str, ...] = ("L1", "L2", "LLC", "memory")
# The memory working set: this many times the last-level cache, and at least 1 GiB in all, because a
# virtual machine's sysfs may report less LLC than the host has (here 32 MiB, yet a 512 MiB set still
# streams at 1.4x the 1 GiB figure).
_MEMORY_SET_PER_LLC = 4
_MEMORY_SET_MIN = 1 << 30


def _size_bytes(text: str) -> int:
    text = text.strip().upper()
    scale = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}.get(text[-1:], 1)
    return int(text.rstrip("KMG")) * scale


def _cpu_count(cpu_list: str) -> int:
    count = 0
    for part in cpu_list.strip().split(","):
        lo, _, hi = part.partition("-")
        count += int(hi or lo) - int(lo) + 1 if lo else 0
    return count


SYSFS_CACHES = Path("/sys/devices/system/cpu/cpu0/cache")


@dataclass(frozen=True)
class SysfsCache:
    """One of cpu0's caches as sysfs describes it; `ways` and `line_bytes` None where it does not say."""

    kind: str  # "Data", "Instruction" or "Unified"
    level: int
    size_bytes: int
    sharing_cpus: int
    ways: int | None
    line_bytes: int | None


def _optional_int(path: Path) -> int | None:
    try:
        return int(path.read_text())
    except (OSError, ValueError):
        return None


def sysfs_caches(root: Path = SYSFS_CACHES) -> list[SysfsCache]:
    """cpu0's caches, as the kernel reports them (index<k>/ under `root`); [] where sysfs does not say.
    The one reader of sysfs's cache folders: the peaks' working sets and cachegrind's model use it."""
    found = []
    for index in sorted(root.glob("index[0-9]*")):
        try:
            kind = (index / "type").read_text().strip()
            level = int((index / "level").read_text())
            size = _size_bytes((index / "size").read_text())
            sharing = _cpu_count((index / "shared_cpu_list").read_text())
        except (OSError, ValueError):
            continue
        found.append(SysfsCache(kind, level, size, max(sharing, 1), _optional_int(index / "ways_of_associativity"),
                                _optional_int(index / "coherency_line_size")))  # fmt: skip
    return found


def host_caches(root: Path = SYSFS_CACHES) -> dict[str, tuple[int, int]]:
    """{"L1": (bytes, cpus sharing it), "L2": ..., "LLC": ...}: cpu0's data and unified caches, as the
    kernel reports them; {} where sysfs does not say (the probes then measure memory only)."""
    found = {c.level: (c.size_bytes, c.sharing_cpus) for c in sysfs_caches(root)
             if c.kind != "Instruction" and c.size_bytes > 0}  # fmt: skip
    if not found:
        return {}
    levels = sorted(found)
    named = {f"L{level}": found[level] for level in levels[:-1] if level <= 2}
    named["LLC"] = found[levels[-1]]
    return named


def cache_capacity(caches: dict[str, dict[str, int]], cores: int) -> dict[str, int]:
    """Bytes each cache level holds over `cores` cores: a private cache once per core, a shared one
    once per group of cpus sharing it."""
    return {
        level: entry["bytes"] * max(1, -(-cores // max(1, entry["sharing_cpus"])))
        for level, entry in caches.items()
    }


def probe_working_sets(threads: int, caches: dict[str, tuple[int, int]]) -> dict[str, int]:
    """Bytes per thread for each level's probe: half of the thread's share of that cache (so it
    stays resident next to everything else), and for memory several times the LLC (`_MEMORY_SET_*`)."""
    sets: dict[str, int] = {}
    for level, (size, sharing) in caches.items():
        sets[level] = max(4096, size // 2 // max(1, min(sharing, threads)))
    llc = caches.get("LLC", (64 << 20, 1))[0]
    sets["memory"] = max(_MEMORY_SET_PER_LLC * llc, _MEMORY_SET_MIN) // threads
    return sets


def _compile_probe(source: str, flags: list[str], tmp: Path, name: str) -> Path:
    src, exe = tmp / f"{name}.c", tmp / name
    src.write_text(source)
    subprocess.run(
        ["gcc", "-O2", "-fopenmp", *flags, str(src), "-o", str(exe)],
        check=True,
        capture_output=True,
        timeout=60,
    )
    return exe


def _run_probe(exe: Path, threads: int, *args: str) -> list[float]:
    env = {**os.environ, "OMP_NUM_THREADS": str(threads), "OMP_PROC_BIND": "close", "OMP_PLACES": "cores"}
    out = subprocess.run([str(exe), *args], check=True, capture_output=True, text=True, timeout=120, env=env)
    return [float(v) for v in out.stdout.split()]


def _upper_bound(exe: Path, cores: int, *args: str, private: bool = True) -> tuple[float, float]:
    """(bound, all-core figure), from rates over each thread's own CPU time. For what each core has of
    its own (its FMA pipes, L1, L2, its port into the LLC) the bound is the larger of every core's
    rates added up and one core's rate times the cores (one core alone turbos at least as high).
    Memory is shared and does not add up so: threads a busy machine runs one after the other would
    each have it to themselves. There the bound is the larger of one core's rate and every core's
    bytes over wall time (the stream probe's second figure)."""
    every = _run_probe(exe, cores, *args)
    one = _run_probe(exe, 1, *args)[0] if cores > 1 else every[0]
    if private:
        return max(every[0], one * cores), every[0]
    return max(every[1], one), every[1]


def measure_peaks() -> dict[str, Any]:
    """Run the probes now (several seconds): FMA GFLOP/s per available ISA level, and streaming
    GB/s at each cache level and memory, with working sets sized from this host's caches."""
    _, flags = _cpuinfo()
    cores = host_cores()
    caches = host_caches()
    result: dict[str, Any] = {
        "probe_version": PROBE_VERSION,
        "measured_at": time.time(),
        "cores": cores,
        "gflops": {},
        "gflops_all_cores": {},
        "gbps_levels": {},
        "gbps_all_cores": {},
        "caches": {
            level: {"bytes": size, "sharing_cpus": sharing} for level, (size, sharing) in caches.items()
        },
        # What else ran: a busy host reads the memory figure low (no per-thread CPU time corrects
        # for bandwidth others take); `kernelgraph targets list --refresh-peaks` on a quiet one raises it.
        "load_averages": [os.getloadavg()[0]],
    }
    best_march, best_width = "x86-64-v2", 4
    with tempfile.TemporaryDirectory(prefix="kg-probe-") as tmp:
        for name, (march, width, _) in CPU_LEVELS.items():
            if not _availability(name)[0]:
                continue
            w = width or _native_width(flags)
            exe = _compile_probe(_FMA_C, [f"-march={march}", f"-DWIDTH={w}", "-DREPS=15"], Path(tmp), name)
            result["gflops"][name], result["gflops_all_cores"][name] = _upper_bound(exe, cores)
            if w >= best_width:
                best_march, best_width = march, w
        stream = _compile_probe(
            _STREAM_C, [f"-march={best_march}", f"-DWIDTH={best_width}", "-DREPS=6"], Path(tmp), "stream"
        )
        sets = probe_working_sets(cores, caches)
        for level in MEMORY_LEVELS:
            if level in sets:
                per_thread = sets[level]
                streamed = str(max(64 << 20, 2 * per_thread))  # bytes per repetition per thread
                private = level != "memory"  # each core has its own port into L1, L2 and the LLC
                bound, every = _upper_bound(stream, cores, str(per_thread), streamed, private=private)
                result["gbps_levels"][level], result["gbps_all_cores"][level] = bound, every
        result["working_set_bytes"] = {level: b * cores for level, b in sets.items()}
    result["gbps"] = result["gbps_levels"]["memory"]
    return result


def level_bounds(measured: dict[str, float]) -> dict[str, float]:
    """Each level's bandwidth bound, fastest level first: the larger of its own probe figure and every
    outer level's. Whatever a level holds can be streamed at least as fast as from a level beyond it, so
    a figure an outer level beat (the LLC probe read 20.4 GB/s against memory's 27.9 on a busy host) is
    a low reading, and the outer one is the tighter bound that is still a bound."""
    bounds: dict[str, float] = {}
    outer = 0.0
    for level in reversed(MEMORY_LEVELS):
        if level in measured:
            outer = max(outer, measured[level])
            bounds[level] = outer
    return {level: bounds[level] for level in MEMORY_LEVELS if level in bounds}


_BOUNDS = ("gflops", "gflops_all_cores", "gbps_levels", "gbps_all_cores")


def upper_bounds(old: dict[str, Any], new: dict[str, Any]) -> dict[str, Any]:
    """`new` with every peak the larger of the two measurements' (both of this probe version)."""
    merged = dict(new)
    for group in _BOUNDS:
        merged[group] = {k: max(v, old.get(group, {}).get(k, v)) for k, v in new.get(group, {}).items()}
    merged["gbps"] = merged["gbps_levels"].get("memory", new.get("gbps"))
    merged["load_averages"] = [*old.get("load_averages", []), *new.get("load_averages", [])][-16:]
    return merged


def _peaks_path() -> Path:
    return data_home() / PEAKS_FILE


def host_peaks(*, refresh: bool = False) -> dict[str, Any]:
    """This host's measured peaks, from the cache or measured now and cached. `refresh` measures
    again and keeps, figure by figure, the larger of the two (`upper_bounds`): a probe run on a busy
    machine reads low, never high, so the maximum over runs is the better upper bound."""
    # Keyed by probe version too: older code sharing this data home keeps its own entry, so two
    # checkouts do not re-measure over each other.
    path, key = _peaks_path(), f"{host_identity()}|probe-{PROBE_VERSION}"
    cached: dict[str, Any] = {}
    if path.exists():
        try:
            cached = json.loads(path.read_text())
        except (OSError, json.JSONDecodeError):
            log.warning("ignoring unreadable peaks cache %s", path)
    entry = cached.get(key)
    if refresh or not entry or entry.get("probe_version") != PROBE_VERSION:
        log.info("measuring peaks for host %s", key)
        fresh = measure_peaks()
        entry = upper_bounds(entry, fresh) if entry and entry.get("probe_version") == PROBE_VERSION else fresh
        cached[key] = entry
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(json.dumps(cached, indent=2, sort_keys=True))
        tmp.replace(path)
    return dict(entry)


def _cpu_target(name: str, *, measure: bool) -> Target:
    march, _, _ = CPU_LEVELS[name]
    available, reason = _availability(name)
    target = Target(
        name=name,
        kind="cpu",
        arch=march,
        cflags=(f"-march={march}",),
        cores=host_cores(),
        isa=march,
        host=host_identity(),
        available=available,
        unavailable_reason=reason,
        limits={"host_hash": hashlib.sha1(host_identity().encode()).hexdigest()[:12]},
    )
    if available and measure:
        peaks = host_peaks()
        target = replace(
            target,
            peak_gflops=peaks["gflops"].get(name),
            peak_gbps=peaks["gbps"],
            bandwidth_gbps=level_bounds(peaks["gbps_levels"]),
            cache_bytes=cache_capacity(peaks["caches"], host_cores()),
        )
    return target


def target_names() -> list[str]:
    return list(CPU_LEVELS) + cuda_target_names()


def get_target(name: str, *, measure: bool = True) -> Target:
    """The target called `name`; with `measure`, peaks are filled (probing once per host)."""
    if name not in CPU_LEVELS:
        if name in CUDA_TARGETS:
            return CUDA_TARGETS[name]
        raise UnknownTargetError(name, target_names())
    return _cpu_target(name, measure=measure)


def all_targets(*, measure: bool = True) -> list[Target]:
    """Every known target, available or not (see `available` / `unavailable_reason`)."""
    return [get_target(name, measure=measure) for name in target_names()]


def default_target() -> Target:
    """The best available CPU level below native (v3 when the host has AVX2)."""
    for name in ("cpu-x86-64-v3", "cpu-x86-64-v2"):
        target = get_target(name)
        if target.available:
            return target
    return get_target("cpu-native")
