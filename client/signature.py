"""Raw hardware counters -> the normalized counter signature that retrieval is keyed on.

The signature is a fixed-length vector with every component in [0, 1], comparable across targets
because each component is a fraction of the target's own peak or a rate. docs/counter-signature.md
explains each dimension. A counter that the source did not measure is never silently zero: the
dimension takes its documented neutral value and its name is listed in `Signature.missing`.

The index uses euclidean similarity (1 / (1 + d^2)), so magnitudes matter (a kernel at 9% of peak
bandwidth is not "similar" to one at 90%) and no vector is ever rejected for having zero norm.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum

SIGNATURE_VERSION = 1
SIMILARITY_FUNCTION = "euclidean"

# Fixed overheads that make tiny problems launch-bound: a CUDA launch, an OpenMP fork/join.
LAUNCH_OVERHEAD_NS = {"cuda": 5_000.0, "cpu": 2_000.0}


class CounterSource(StrEnum):
    """Where raw counters came from; each has its own mapping to the signature."""

    CPU_CACHEGRIND = "cpu_cachegrind"  # wall time + cachegrind on the real binary
    CPU_TIMING = "cpu_timing"  # wall time only (cachegrind unavailable or skipped)
    NVIDIA_NCU = "nvidia_ncu"  # Nsight Compute runtime metrics
    NVIDIA_TIMING = "nvidia_timing"  # GPU timing without ncu: achieved fractions only
    NVIDIA_STATIC = "nvidia_static"  # compiled artifact only, no GPU ran
    KERNELBENCH_TIMING = "kernelbench_timing"  # imported published timings


class CounterName(StrEnum):
    """The counter names both sides agree on: what the backends measure and the signature reads.

    A measurement's `counters` may carry other names too (raw tool events such as cachegrind's,
    prefixed `cg_`); those are stored as they are, but nothing keys on them.
    """

    # Roofline, every source: derived from the task's FLOP and byte counts and the median time.
    TIME_NS = "time_ns"
    FLOPS = "flops"
    BYTES = "bytes"
    GFLOPS = "gflops"
    GBPS = "gbps"
    ARITHMETIC_INTENSITY = "arithmetic_intensity"
    COMPUTE_FRACTION_OF_PEAK = "compute_fraction_of_peak"
    MEMORY_FRACTION_OF_PEAK = "memory_fraction_of_peak"
    THREADS = "threads"
    # Timing spread, as the backends time it.
    IQR_NS = "iqr_ns"
    REL_IQR = "rel_iqr"
    REVERIFIED_SUSPICIOUS = "reverified_suspicious"  # 1.0: a suspicious time passed re-verification
    # CPU cachegrind (scaled to the full problem; see agent/backends/counters.py).
    INSTRUCTIONS = "instructions"
    INSTRUCTIONS_MEASURED = "instructions_measured"
    COUNTER_SCALE = "counter_scale"
    D1_MISS_RATE = "d1_miss_rate"
    LL_MISS_RATE = "ll_miss_rate"
    LL_GLOBAL_MISS_RATE = "ll_global_miss_rate"
    # NVIDIA static metrics of the compiled artifact (no GPU needed).
    REGISTERS_PER_THREAD = "registers_per_thread"
    SPILL_BYTES = "spill_bytes"
    SHARED_MEM_BYTES = "shared_mem_bytes"
    NUM_WARPS = "num_warps"
    NUM_STAGES = "num_stages"
    THREADS_PER_BLOCK = "threads_per_block"
    THEORETICAL_OCCUPANCY_PCT = "theoretical_occupancy_pct"
    BLOCKS_PER_SM = "blocks_per_sm"
    NUM_KERNELS = "num_kernels"
    FITS = "fits"  # 0.0: the variant does not fit the target's registers or shared memory
    # NVIDIA Nsight Compute runtime metrics, in percent.
    SM_THROUGHPUT_PCT = "sm_throughput_pct"
    DRAM_THROUGHPUT_PCT = "dram_throughput_pct"
    L1_HIT_RATE_PCT = "l1_hit_rate_pct"
    L2_HIT_RATE_PCT = "l2_hit_rate_pct"
    ACHIEVED_OCCUPANCY_PCT = "achieved_occupancy_pct"


@dataclass(frozen=True)
class Dimension:
    name: str
    neutral: float  # used, and reported as missing, when the source cannot measure it
    meaning: str


DIMENSIONS: tuple[Dimension, ...] = (
    Dimension("compute_fraction", 0.5, "achieved FLOP/s / the target's peak FLOP/s"),
    Dimension("memory_fraction", 0.5, "achieved bytes/s / the target's peak memory bandwidth"),
    Dimension("arithmetic_intensity", 0.5, "log10(FLOP/byte) mapped from [-2, 3] to [0, 1]"),
    Dimension("ridge_position", 0.5, "intensity relative to the target's ridge point, log2 in [-6, 6]"),
    Dimension("l1_miss_rate", 0.5, "first-level data cache miss rate (CPU D1, GPU 1 - L1TEX hit)"),
    Dimension("llc_miss_rate", 0.5, "last-level cache miss rate (CPU LL, GPU 1 - L2 hit)"),
    Dimension(
        "parallel_efficiency", 0.5, "CPU: threads used / cores; GPU: occupancy (achieved or theoretical)"
    ),
    Dimension(
        "issue_efficiency", 0.5, "CPU: FLOP per instruction / the ISA's vector FMA width; GPU: SM throughput"
    ),
    Dimension("spill_pressure", 0.0, "register spills or local memory traffic, log-scaled; 0 means none"),
    Dimension("register_pressure", 0.5, "registers per thread / 255 (GPU); CPU: unmeasured"),
    Dimension("launch_overhead_share", 0.5, "fixed launch/fork cost / runtime"),
    Dimension("speed_of_light", 0.5, "max(compute_fraction, memory_fraction): how close to any roof"),
)
SIGNATURE_DIM = len(DIMENSIONS)
DIMENSION_NAMES = tuple(d.name for d in DIMENSIONS)

# FP32 FLOPs per instruction at full vector FMA width, by ISA level (2 FLOP per FMA lane).
_FLOPS_PER_VECTOR_INSTRUCTION = {"x86-64-v2": 8.0, "x86-64-v3": 16.0, "x86-64-v4": 32.0, "native": 32.0}


@dataclass(frozen=True)
class TargetPeaks:
    """What the signature needs to know about a target."""

    kind: str  # "cpu" | "cuda"
    peak_gflops: float | None
    peak_gbps: float | None
    cores: int | None = None
    isa: str | None = None  # CPU march level, e.g. "x86-64-v3"


@dataclass(frozen=True)
class Signature:
    vector: tuple[float, ...]
    missing: tuple[str, ...]
    version: int = SIGNATURE_VERSION

    def as_dict(self) -> dict[str, float]:
        return dict(zip(DIMENSION_NAMES, self.vector, strict=True))


def _clip(value: float) -> float:
    return min(1.0, max(0.0, value))


def _counter(counters: Mapping[str, float], name: CounterName) -> float | None:
    # Counters reach the signature validated (Measurement, RetrieveRequest: finite floats only), so
    # an absent counter is the only unmeasured one.
    value = counters.get(name)
    return None if value is None else float(value)


def _ratio(numerator: float | None, denominator: float | None) -> float | None:
    if numerator is None or denominator is None or denominator <= 0:
        return None
    return _clip(numerator / denominator)


def _log_intensity(ai: float | None) -> float | None:
    if ai is None or ai <= 0:
        return None
    return _clip((math.log10(ai) + 2.0) / 5.0)


def _ridge_position(ai: float | None, peaks: TargetPeaks) -> float | None:
    if ai is None or ai <= 0 or not peaks.peak_gflops or not peaks.peak_gbps:
        return None
    ridge = peaks.peak_gflops / peaks.peak_gbps
    return _clip((math.log2(ai / ridge) + 6.0) / 12.0)


def _launch_share(time_ns: float | None, kind: str) -> float | None:
    if time_ns is None or time_ns <= 0:
        return None
    overhead = LAUNCH_OVERHEAD_NS.get(kind, 2_000.0)
    return _clip(overhead / (overhead + time_ns))


def _achieved(counters: Mapping[str, float]) -> tuple[float | None, float | None, float | None]:
    """GFLOP/s, GB/s and FLOP/byte from explicit counters or from flops, bytes and time."""
    time_ns = _counter(counters, CounterName.TIME_NS)
    flops = _counter(counters, CounterName.FLOPS)
    nbytes = _counter(counters, CounterName.BYTES)
    gflops = _counter(counters, CounterName.GFLOPS)
    gbps = _counter(counters, CounterName.GBPS)
    if gflops is None and flops is not None and time_ns:
        gflops = flops / time_ns
    if gbps is None and nbytes is not None and time_ns:
        gbps = nbytes / time_ns
    ai = _counter(counters, CounterName.ARITHMETIC_INTENSITY)
    if ai is None and flops is not None and nbytes:
        ai = flops / nbytes
    return gflops, gbps, ai


def compute_signature(
    source: CounterSource | str, counters: Mapping[str, float], peaks: TargetPeaks
) -> Signature:
    """Map one measurement's raw counters to the signature; see docs/counter-signature.md.

    `counters` are validated ones (a Measurement's or a RetrieveRequest's: every value finite).
    Names (`CounterName`; all optional, what is absent is reported in `missing`):
    time_ns, flops, bytes, gflops, gbps, arithmetic_intensity, threads;
    CPU cachegrind: instructions, d1_miss_rate, ll_miss_rate;
    NVIDIA: sm_throughput_pct, dram_throughput_pct, l1_hit_rate_pct, l2_hit_rate_pct,
    achieved_occupancy_pct, theoretical_occupancy_pct, registers_per_thread, spill_bytes.
    """
    source = CounterSource(source)
    gflops, gbps, ai = _achieved(counters)
    time_ns = _counter(counters, CounterName.TIME_NS)
    values: dict[str, float | None] = {
        "compute_fraction": _ratio(gflops, peaks.peak_gflops),
        "memory_fraction": _ratio(gbps, peaks.peak_gbps),
        "arithmetic_intensity": _log_intensity(ai),
        "ridge_position": _ridge_position(ai, peaks),
        "launch_overhead_share": _launch_share(time_ns, peaks.kind),
    }
    if source in (CounterSource.CPU_CACHEGRIND, CounterSource.CPU_TIMING):
        values.update(_cpu_dimensions(counters, peaks))
    elif source in (CounterSource.NVIDIA_NCU, CounterSource.NVIDIA_TIMING, CounterSource.NVIDIA_STATIC):
        values.update(_nvidia_dimensions(counters))
    compute, memory = values["compute_fraction"], values["memory_fraction"]
    if compute is not None or memory is not None:
        values["speed_of_light"] = max(v for v in (compute, memory) if v is not None)

    vector: list[float] = []
    missing: list[str] = []
    for dim in DIMENSIONS:
        value = values.get(dim.name)
        if value is None:
            missing.append(dim.name)
            value = dim.neutral
        vector.append(round(_clip(value), 6))
    return Signature(tuple(vector), tuple(missing))


def _cpu_dimensions(counters: Mapping[str, float], peaks: TargetPeaks) -> dict[str, float | None]:
    instructions = _counter(counters, CounterName.INSTRUCTIONS)
    flops = _counter(counters, CounterName.FLOPS)
    threads = _counter(counters, CounterName.THREADS)
    issue = None
    if instructions and flops is not None:
        width = _FLOPS_PER_VECTOR_INSTRUCTION.get(peaks.isa or "", 16.0)
        issue = _clip((flops / instructions) / width)
    d1 = _counter(counters, CounterName.D1_MISS_RATE)
    ll = _counter(counters, CounterName.LL_MISS_RATE)
    return {
        "l1_miss_rate": _clip(d1) if d1 is not None else None,
        "llc_miss_rate": _clip(ll) if ll is not None else None,
        "parallel_efficiency": _ratio(threads, float(peaks.cores)) if peaks.cores else None,
        "issue_efficiency": issue,
        # A CPU build has no register-allocation counter worth keying on; spills are not measured.
        "spill_pressure": 0.0 if instructions is not None else None,
    }


def _pct(counters: Mapping[str, float], key: CounterName) -> float | None:
    value = _counter(counters, key)
    return None if value is None else _clip(value / 100.0)


def _nvidia_dimensions(counters: Mapping[str, float]) -> dict[str, float | None]:
    l1_hit = _pct(counters, CounterName.L1_HIT_RATE_PCT)
    l2_hit = _pct(counters, CounterName.L2_HIT_RATE_PCT)
    occupancy = _pct(counters, CounterName.ACHIEVED_OCCUPANCY_PCT)
    if occupancy is None:
        occupancy = _pct(counters, CounterName.THEORETICAL_OCCUPANCY_PCT)
    registers = _counter(counters, CounterName.REGISTERS_PER_THREAD)
    spills = _counter(counters, CounterName.SPILL_BYTES)
    values: dict[str, float | None] = {
        "l1_miss_rate": None if l1_hit is None else 1.0 - l1_hit,
        "llc_miss_rate": None if l2_hit is None else 1.0 - l2_hit,
        "parallel_efficiency": occupancy,
        "issue_efficiency": _pct(counters, CounterName.SM_THROUGHPUT_PCT),
        "register_pressure": None if registers is None else _clip(registers / 255.0),
        "spill_pressure": None if spills is None else _clip(math.log2(1.0 + spills) / 16.0),
    }
    # ncu reports fractions of peak directly; they beat fractions derived from our published peaks.
    dram = _pct(counters, CounterName.DRAM_THROUGHPUT_PCT)
    if dram is not None:
        values["memory_fraction"] = dram
    return values
