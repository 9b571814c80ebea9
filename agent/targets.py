"""Compilation targets: CPU march levels now, CUDA architectures later, one dataclass for both.

Peaks come from probes run once per host (a STREAM-like triad for bandwidth, an FMA-throughput loop
per march level) and are cached as JSON under the data home, keyed by host identity, because a
roofline fraction is only meaningful against what this machine actually reaches.
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
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from functools import cache
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)

PEAKS_FILE = "peaks.json"
PROBE_VERSION = 1


class UnknownTargetError(KeyError):
    """No target by that name; the message lists the known names."""

    def __init__(self, name: str, known: list[str]) -> None:
        self.name, self.known = name, known
        super().__init__(name)

    def __str__(self) -> str:
        return f"unknown target {self.name!r}; known: {', '.join(self.known)}"


@dataclass(frozen=True)
class Target:
    """Where a kernel is compiled for and run. `limits` holds kind-specific facts (e.g. sm, smem)."""

    name: str
    kind: str  # "cpu" | "cuda"
    arch: str  # gcc -march value, or "sm_90" for CUDA
    cflags: tuple[str, ...] = ()
    peak_gflops: float | None = None  # fp32, all cores
    peak_gbps: float | None = None
    cores: int | None = None
    isa: str | None = None  # CPU: the march level the signature normalises against
    host: str = ""
    available: bool = True
    unavailable_reason: str = ""
    limits: Mapping[str, Any] = field(default_factory=dict)

    @property
    def ridge_flop_per_byte(self) -> float | None:
        if not self.peak_gflops or not self.peak_gbps:
            return None
        return self.peak_gflops / self.peak_gbps


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
    """`KERNELGRAPH_DATA_HOME`, default ~/.local/share/kernelgraph (read at call time, not import)."""
    return Path(os.environ.get("KERNELGRAPH_DATA_HOME") or Path.home() / ".local/share/kernelgraph")


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


_STREAM_C = r"""
#include <stdio.h>
#include <stdlib.h>
#include <omp.h>
int main(void) {
    const long n = 1L << 24; float *a = malloc(n * 4), *b = malloc(n * 4), *c = malloc(n * 4);
    #pragma omp parallel for schedule(static)
    for (long i = 0; i < n; i++) { a[i] = 0.0f; b[i] = 1.0f; c[i] = 2.0f; }
    double best = 1e30;
    for (int r = 0; r < 8; r++) {
        double t = omp_get_wtime();
        #pragma omp parallel for schedule(static)
        for (long i = 0; i < n; i++) a[i] = b[i] + 3.0f * c[i];
        t = omp_get_wtime() - t; if (t < best) best = t;
    }
    printf("%f %f\n", 3.0 * 4 * n / best / 1e9, a[n / 2]);
    return 0;
}
"""

_FMA_C = r"""
#include <stdio.h>
#include <omp.h>
typedef float vf __attribute__((vector_size(WIDTH * 4)));
int main(void) {
    const long iters = 20000000L / WIDTH * 4;
    double best = 1e30, total = 0.0;
    for (int r = 0; r < 3; r++) {
        double t = omp_get_wtime();
        #pragma omp parallel reduction(+:total)
        {
            vf acc[12], m, a;
            for (int k = 0; k < WIDTH; k++) { m[k] = 0.999999f; a[k] = 1e-7f; }
            for (int j = 0; j < 12; j++) acc[j] = m * (float)(j + omp_get_thread_num());
            for (long i = 0; i < iters; i++) {
                #pragma GCC unroll 12
                for (int j = 0; j < 12; j++) acc[j] = acc[j] * m + a;
            }
            for (int j = 0; j < 12; j++) for (int k = 0; k < WIDTH; k++) total += acc[j][k];
        }
        t = omp_get_wtime() - t; if (t < best) best = t;
    }
    int threads = omp_get_max_threads();
    printf("%f %f\n", 2.0 * 12 * WIDTH * iters * threads / best / 1e9, total);
    return 0;
}
"""


def _run_probe(source: str, flags: list[str]) -> float:
    with tempfile.TemporaryDirectory(prefix="kg-probe-") as tmp:
        src, exe = Path(tmp) / "probe.c", Path(tmp) / "probe"
        src.write_text(source)
        subprocess.run(
            ["gcc", "-O2", "-fopenmp", *flags, str(src), "-o", str(exe)],
            check=True,
            capture_output=True,
            timeout=60,
        )
        env = {**os.environ, "OMP_NUM_THREADS": str(host_cores()), "OMP_PROC_BIND": "close"}
        out = subprocess.run([str(exe)], check=True, capture_output=True, text=True, timeout=120, env=env)
        return float(out.stdout.split()[0])


def measure_peaks() -> dict[str, Any]:
    """Run the probes now (a few seconds): triad GB/s once, FMA GFLOP/s per available level."""
    _, flags = _cpuinfo()
    result: dict[str, Any] = {"probe_version": PROBE_VERSION, "measured_at": time.time(), "gflops": {}}
    result["gbps"] = _run_probe(_STREAM_C, ["-march=x86-64-v2"])
    for name, (march, width, _) in CPU_LEVELS.items():
        if not _availability(name)[0]:
            continue
        w = width or _native_width(flags)
        result["gflops"][name] = _run_probe(_FMA_C, [f"-march={march}", f"-DWIDTH={w}"])
    return result


def _peaks_path() -> Path:
    return data_home() / PEAKS_FILE


def host_peaks(*, refresh: bool = False) -> dict[str, Any]:
    """This host's measured peaks, from the cache or measured now and cached."""
    path, key = _peaks_path(), host_identity()
    cached: dict[str, Any] = {}
    if path.exists():
        try:
            cached = json.loads(path.read_text())
        except (OSError, json.JSONDecodeError):
            log.warning("ignoring unreadable peaks cache %s", path)
    entry = cached.get(key)
    if refresh or not entry or entry.get("probe_version") != PROBE_VERSION:
        log.info("measuring peaks for host %s", key)
        entry = measure_peaks()
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
        target = replace(target, peak_gflops=peaks["gflops"].get(name), peak_gbps=peaks["gbps"])
    return target


def target_names() -> list[str]:
    from kernelgraph.agent.targets_cuda import cuda_target_names  # CUDA targets: datasheet peaks, no probing

    return list(CPU_LEVELS) + cuda_target_names()


def get_target(name: str, *, measure: bool = True) -> Target:
    """The target called `name`; with `measure`, peaks are filled (probing once per host)."""
    if name not in CPU_LEVELS:
        from kernelgraph.agent.targets_cuda import CUDA_TARGETS

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
