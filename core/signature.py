"""Raw hardware counters -> the normalized counter signature that retrieval is keyed on (version 4).

The signature has one slot per dimension, each either a measured value in [0, 1] (a fraction of the
target's own peak or a rate, so comparable across targets) or None: *not measured*. An unmeasured
dimension is never imputed; it is left out of the distance, which is renormalised over the dimensions
both sides measured (`masked_similarity`). docs/counter-signature.md explains each dimension.

Each counter source measures a fixed set of dimensions (`SOURCE_DIMENSIONS`); a measurement that has
all of them ("complete") also carries its values on those dimensions alone (`Signature.source_vector`),
which one vector index per source searches without losing the mask (docs/retrieval.md).
Distances are taken over *scaled* values: each dimension divided by its source's scale for it
(`source_scales`; the CPU sources' scales are the development set's spreads, the others' 1), so that
no dimension weighs by its raw range alone. The stored `signature` and the API's lists stay raw; the
per-source vectors the indexes hold are scaled (`Signature.source_vector`).
Similarity is euclidean, 1 / (1 + d^2 / (n x w^2)) over the n shared dimensions, w the state's source's
similarity unit (`similarity_unit`), so magnitudes matter (a kernel at 9% of peak bandwidth is not
"similar" to one at 90%) and no vector is ever rejected for having zero norm.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum

SIGNATURE_VERSION = 4
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
    THREADS = "threads"  # CPU: threads the kernel actually ran on while timed (measured in the child)
    # CPU parallelism, measured over the timed calls: process CPU time (every thread) / wall time / cores.
    CPU_TIME_NS = "cpu_time_ns"  # process CPU time per timed call, all threads
    CPU_UTILIZATION = "cpu_utilization"
    CORES = "cores"  # the cores the timed run was given (OMP_NUM_THREADS)
    # Timing spread, as the backends time it.
    IQR_NS = "iqr_ns"
    REL_IQR = "rel_iqr"
    # The hand-over's cost (isolated protocol), taken off every call timed by its CPU time / by the wall clock.
    CALL_OVERHEAD_NS = "call_overhead_ns"
    CALL_WALL_OVERHEAD_NS = "call_wall_overhead_ns"
    REVERIFIED_SUSPICIOUS = "reverified_suspicious"  # 1.0: a suspicious time passed re-verification
    # CPU cachegrind on the timed inputs (agent/backends/counters.py). `counter_scale` is the timed
    # problem's work / the simulated one's: 1 (or absent) means the cache counters describe the timed run.
    INSTRUCTIONS = "instructions"
    INSTRUCTIONS_MEASURED = "instructions_measured"
    COUNTER_SCALE = "counter_scale"
    COUNTER_THREADS = "counter_threads"  # OMP threads the simulated run used (the timed run's)
    D1_MISS_RATE = "d1_miss_rate"
    LL_MISS_RATE = "ll_miss_rate"
    LL_GLOBAL_MISS_RATE = "ll_global_miss_rate"
    LL_MISS_BYTES = "ll_miss_bytes"  # last-level data misses x 64 B lines: the traffic past the LL
    OPERATIONAL_INTENSITY = (
        "operational_intensity"  # flops / ll_miss_bytes (measured, unlike `arithmetic_intensity`)
    )
    # The cache model cachegrind simulated (the host's, nearest valid geometry); absent before
    # signature 3, whose counters came from valgrind's fixed 32 KiB D1 / 8 MiB LL model.
    CACHE_D1_BYTES = "cache_d1_bytes"
    CACHE_D1_WAYS = "cache_d1_ways"
    CACHE_LL_BYTES = "cache_ll_bytes"
    CACHE_LL_WAYS = "cache_ll_ways"
    CACHE_LINE_BYTES = "cache_line_bytes"
    CACHE_LL_LEVEL = "cache_ll_level"  # the host cache level LL stands for (0: valgrind's default model)
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


# Nsight Compute metric -> the counter KernelGraph records. Percentages stay percentages.
NCU_METRICS: dict[str, CounterName] = {
    "gpu__time_duration.sum": CounterName.TIME_NS,
    "sm__throughput.avg.pct_of_peak_sustained_elapsed": CounterName.SM_THROUGHPUT_PCT,
    "dram__throughput.avg.pct_of_peak_sustained_elapsed": CounterName.DRAM_THROUGHPUT_PCT,
    "l1tex__t_sector_hit_rate.pct": CounterName.L1_HIT_RATE_PCT,
    "lts__t_sector_hit_rate.pct": CounterName.L2_HIT_RATE_PCT,
    "sm__warps_active.avg.pct_of_peak_sustained_active": CounterName.ACHIEVED_OCCUPANCY_PCT,
    "sm__maximum_warps_per_active_cycle_pct": CounterName.THEORETICAL_OCCUPANCY_PCT,
    "launch__registers_per_thread": CounterName.REGISTERS_PER_THREAD,
    "launch__block_size": CounterName.THREADS_PER_BLOCK,
    "dram__bytes.sum": CounterName.BYTES,
}
# ncu reports no FLOP count: it counts executed floating-point instructions per thread. FLOPs are
# adds + multiplies + 2 x fused multiply-adds (the count Nsight Compute's own roofline uses), over
# half, single and double precision; the target's peak is its fp32 peak.
NCU_FLOP_METRICS: dict[str, float] = {
    f"smsp__sass_thread_inst_executed_op_{precision}{op}_pred_on.sum": (2.0 if op == "fma" else 1.0)
    for precision in ("h", "f", "d")
    for op in ("add", "mul", "fma")
}
NCU_METRIC_NAMES = (*NCU_METRICS, *NCU_FLOP_METRICS)


def with_ncu_names(counters: Mapping[str, float]) -> dict[str, float]:
    """`counters` plus the KernelGraph counters its raw ncu metrics stand for (a counter given under
    KernelGraph's own name wins); `flops` from the instruction counts when any is given."""
    out = dict(counters)
    for metric, name in NCU_METRICS.items():
        if metric in counters and name.value not in counters:
            out[name.value] = float(counters[metric])
    flop_metrics = [m for m in NCU_FLOP_METRICS if m in counters]
    if flop_metrics and CounterName.FLOPS.value not in counters:
        out[CounterName.FLOPS.value] = sum(float(counters[m]) * NCU_FLOP_METRICS[m] for m in flop_metrics)
    return out


@dataclass(frozen=True)
class Dimension:
    name: str
    meaning: str


DIMENSIONS: tuple[Dimension, ...] = (
    Dimension("compute_fraction", "achieved FLOP/s / the target's peak FLOP/s"),
    Dimension("memory_fraction", "achieved bytes/s / the target's peak memory bandwidth"),
    Dimension(
        "ridge_position",
        "measured operational intensity (FLOP per byte past the last-level cache) relative to the "
        "target's ridge point, log2 in [-6, 6]",
    ),
    Dimension("l1_miss_rate", "first-level data cache miss rate (CPU D1, GPU 1 - L1TEX hit)"),
    Dimension("llc_miss_rate", "last-level cache miss rate (CPU LL, GPU 1 - L2 hit)"),
    Dimension(
        "parallel_efficiency",
        "CPU: threads the timed call started / the cores it was given; GPU: occupancy",
    ),
    Dimension(
        "issue_efficiency", "CPU: FLOP per instruction / the ISA's vector FMA width; GPU: SM throughput"
    ),
    Dimension("spill_pressure", "GPU register spills, log-scaled; 0 means none"),
    Dimension("register_pressure", "GPU registers per thread / 255"),
    Dimension("launch_overhead_share", "fixed launch/fork cost / runtime"),
    Dimension("speed_of_light", "max(compute_fraction, memory_fraction): how close to any roof"),
)
SIGNATURE_DIM = len(DIMENSIONS)
DIMENSION_NAMES = tuple(d.name for d in DIMENSIONS)
_INDEX = {name: i for i, name in enumerate(DIMENSION_NAMES)}

# The dimensions each counter source measures, and no others: a value the source cannot measure is
# never read from its counters, so every measurement of one source has the same mask once complete.
# The CPU sources measure what the drop rule kept on the two-task development set (docs/counter-
# signature.md: the report results/signature-20261202T145436Z.json, layernorm and rmsnorm, dropped
# speed_of_light, |r| = 1.000 with memory_fraction, and the CPU-time reading of parallel_efficiency,
# noise 0.63 x its spread, for the thread share; memory_fraction, |r| = 0.943 with compute_fraction,
# and llc_miss_rate, which signature 3's one-task report had dropped, stay). The NVIDIA sources'
# readings could not be judged on the CPU development set: they measure what they did in version 2.
CPU_DIMENSIONS_KEPT = (
    "compute_fraction",
    "memory_fraction",
    "ridge_position",
    "l1_miss_rate",
    "llc_miss_rate",
    "parallel_efficiency",
    "issue_efficiency",
    "launch_overhead_share",
)
SOURCE_DIMENSIONS: dict[CounterSource, tuple[str, ...]] = {
    CounterSource.CPU_CACHEGRIND: CPU_DIMENSIONS_KEPT,
    CounterSource.CPU_TIMING: ("compute_fraction", "memory_fraction", "parallel_efficiency", "launch_overhead_share"),
    CounterSource.NVIDIA_NCU: (
        "compute_fraction", "memory_fraction", "l1_miss_rate", "llc_miss_rate", "parallel_efficiency",
        "issue_efficiency", "spill_pressure", "register_pressure", "launch_overhead_share", "speed_of_light",
    ),
    CounterSource.NVIDIA_TIMING: (
        "compute_fraction", "memory_fraction", "parallel_efficiency", "spill_pressure", "register_pressure",
        "launch_overhead_share", "speed_of_light",
    ),
    CounterSource.NVIDIA_STATIC: ("parallel_efficiency", "spill_pressure", "register_pressure"),
    CounterSource.KERNELBENCH_TIMING: ("launch_overhead_share",),
}  # fmt: skip
# Each kept CPU dimension's scale: its spread between states (SD of the state means) on the development
# set (layernorm and rmsnorm), at least 0.01: the standardisation rule of docs/counter-signature.md,
# applied once to the report results/signature-20261202T145436Z.json (kernelgraph/bench/signature.py
# dimension_scales; parallel_efficiency's is the thread share's, the reading it measures), to 4
# significant digits. Frozen here; nothing refits them.
CPU_DIMENSION_SCALES: dict[str, float] = {
    "compute_fraction": 0.04411,
    "memory_fraction": 0.1157,
    "ridge_position": 0.04008,
    "l1_miss_rate": 0.04005,
    "llc_miss_rate": 0.08597,
    "parallel_efficiency": 0.1858,
    "issue_efficiency": 0.03638,
    "launch_overhead_share": 0.05575,
}
_CPU_SOURCES = (CounterSource.CPU_CACHEGRIND, CounterSource.CPU_TIMING)


def source_scales(source: CounterSource | str | None) -> tuple[float, ...]:
    """One scale per dimension (SIGNATURE_DIM of them) for states of `source`: the CPU sources share
    CPU_DIMENSION_SCALES; the NVIDIA sources, kernelbench_timing and a signature without a source keep
    scale 1 (the CPU development set cannot judge them)."""
    if source is None or CounterSource(source) not in _CPU_SOURCES:
        return (1.0,) * SIGNATURE_DIM
    return tuple(CPU_DIMENSION_SCALES.get(name, 1.0) for name in DIMENSION_NAMES)


# The scales by source, as the Cypher queries that compute distances or per-source vectors take them
# ($source_scales: cypher/record_attempts, nearest_states_by_signature_exact, what_worked_from_states_like).
SOURCE_SCALES_PARAM: dict[str, list[float]] = {s.value: list(source_scales(s)) for s in CounterSource}

# The similarity's unit w, in its source's scaled units: a state at an RMS distance of w per shared
# dimension has similarity 0.5, whatever the number of dimensions (docs/counter-signature.md, "The
# similarity's unit"). The CPU sources' scales are spreads between development states, so w = 1: a
# state one typical between-state difference away scores 0.5. The sources at scale 1 (nothing judged
# them) keep w^2 = 1 / SIGNATURE_DIM: their similarity stays 1 / (1 + d^2 x SIGNATURE_DIM / n), as
# before this unit was chosen. A unit changes no stored value: it is applied when scores are computed.
CPU_SIMILARITY_UNIT = 1.0
UNJUDGED_SIMILARITY_UNIT = 1.0 / math.sqrt(SIGNATURE_DIM)


def similarity_unit(source: CounterSource | str | None) -> float:
    """The similarity's unit w for states of `source` (a signature without a source: not judged)."""
    if source is None or CounterSource(source) not in _CPU_SOURCES:
        return UNJUDGED_SIMILARITY_UNIT
    return CPU_SIMILARITY_UNIT


# The units by source, as the exact Cypher query takes them ($source_units: nearest_states_by_signature_exact).
SOURCE_UNITS_PARAM: dict[str, float] = {s.value: similarity_unit(s) for s in CounterSource}


def similarity(d2: float, shared: int, unit: float) -> float:
    """1 / (1 + d^2 / (shared x unit^2)): `d2` the squared scaled distance over `shared` dimensions.
    The one conversion of a distance into a similarity (the Cypher queries compute the same)."""
    return 1.0 / (1.0 + d2 / (shared * unit**2))


# The two CPU readings of parallelism the signature report judged (`dimension_values` gives both):
# the threads the timed call started (counted by the child, deterministic) / the cores the run was
# given, which signature 3 reads as parallel_efficiency; and version 2's process CPU time / wall time
# / cores over the timed calls (`cpu_utilization`), dropped as noise (0 for calls too short for the
# CPU clock to advance).
THREAD_SHARE = "thread_share"
CPU_TIME_SHARE = "cpu_time_share"
# A stored state is a neighbour of a query only when the query measured every dimension the state did,
# and at least this many of them (fewer when the query itself measured fewer): a distance over one or
# two dimensions says little about a state, however it is renormalised.
MIN_SHARED_DIMENSIONS = 3

# FP32 FLOPs per instruction at full vector FMA width, by ISA level (2 FLOP per FMA lane).
_FLOPS_PER_VECTOR_INSTRUCTION = {"x86-64-v2": 8.0, "x86-64-v3": 16.0, "x86-64-v4": 32.0, "native": 32.0}
LINE_BYTES = 64  # the cache line of the cachegrind model (agent/backends/counters.py)


def source_dimensions(source: CounterSource | str) -> tuple[int, ...]:
    """Indexes (into DIMENSIONS) of the dimensions `source` measures, in signature order."""
    names = set(SOURCE_DIMENSIONS[CounterSource(source)])
    return tuple(i for i, name in enumerate(DIMENSION_NAMES) if name in names)


def source_property(source: CounterSource | str) -> str:
    """The Measurement property holding a complete measurement's values on its source's dimensions."""
    return f"signature_{CounterSource(source).value}"


def source_index(source: CounterSource | str) -> str:
    """The vector index over `source_property(source)`."""
    return f"measurement_signature_{CounterSource(source).value}"


# Beyond these fractions of a target's peaks a time contradicts the hardware (the evaluator's
# IMPLAUSIBLE outcome, agent/evaluator.py; the service's `implausible` flag, service/recording.py).
MAX_COMPUTE_FRACTION = 1.1  # of the measured FMA peak
MAX_MEMORY_FRACTION = 8.0  # of DRAM triad bandwidth: cache-resident data legitimately beats DRAM


def plausibility_floor_ns(
    flops: float | None, nbytes: float | None, peak_gflops: float | None, peak_gbps: float | None
) -> float | None:
    """The least time the declared work (`flops`, `nbytes`) can take within the peaks' fractions above
    (GFLOP/s and GB/s are FLOP and bytes per ns); None when neither work nor a peak is known."""
    floors = []
    if flops and peak_gflops:
        floors.append(flops / (MAX_COMPUTE_FRACTION * peak_gflops))
    if nbytes and peak_gbps:
        floors.append(nbytes / (MAX_MEMORY_FRACTION * peak_gbps))
    return max(floors) if floors else None


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
    """One value per dimension, None where not measured, and the counter source it came from (None for a
    signature given as a list, e.g. a query's)."""

    values: tuple[float | None, ...]
    source: CounterSource | None = None
    version: int = SIGNATURE_VERSION

    def __post_init__(self) -> None:
        if len(self.values) != SIGNATURE_DIM:
            raise ValueError(f"a signature has {SIGNATURE_DIM} dimensions, got {len(self.values)}")

    @property
    def measured(self) -> tuple[int, ...]:
        """Indexes of the measured dimensions."""
        return tuple(i for i, v in enumerate(self.values) if v is not None)

    @property
    def missing(self) -> tuple[str, ...]:
        return tuple(DIMENSION_NAMES[i] for i, v in enumerate(self.values) if v is None)

    @property
    def vector(self) -> tuple[float, ...]:
        """The stored form: 0.0 at an unmeasured dimension, which `measured` leaves out of every distance."""
        return tuple(0.0 if v is None else v for v in self.values)

    @property
    def scaled_vector(self) -> tuple[float, ...]:
        """`vector` divided by its source's scales (`source_scales`): what every distance is taken over."""
        return tuple(v / s for v, s in zip(self.vector, source_scales(self.source), strict=True))

    @property
    def complete(self) -> bool:
        """Every dimension of its source measured: the measurement can sit in its source's vector index."""
        return self.source is not None and self.measured == source_dimensions(self.source)

    @property
    def source_vector(self) -> tuple[float, ...] | None:
        """The scaled values on the source's dimensions, when complete (what the source's vector index
        holds, so that the index's euclidean score is `masked_similarity`'s, before the similarity's unit)."""
        if not self.complete or self.source is None:
            return None
        vector = self.scaled_vector
        return tuple(vector[i] for i in source_dimensions(self.source))

    def as_dict(self) -> dict[str, float | None]:
        return dict(zip(DIMENSION_NAMES, self.values, strict=True))

    def stored(self, *, indexed: bool) -> dict[str, object]:
        """The Measurement properties that hold this signature (docs/graph-model.md). `indexed`: also its
        per-source vector, which puts it in its source's vector index; only states an attempt started
        from (explored) are there, since neighbour search returns nothing else."""
        props: dict[str, object] = {
            "signature": list(self.vector),
            "signature_dims": list(self.measured),
            "signature_missing": list(self.missing),
            "signature_version": self.version,
            "signature_complete": self.complete,
        }
        source_vector = self.source_vector
        if indexed and source_vector is not None and self.source is not None:
            props[source_property(self.source)] = list(source_vector)
        return props


def signature_from_values(
    values: Sequence[float | None], source: CounterSource | str | None = None
) -> Signature:
    """A signature given as a list (None = not measured). With `source`, a value at a dimension that the
    source does not measure is an error (ValueError naming it), never silently dropped."""
    checked = tuple(None if v is None else _clip(float(v)) for v in values)
    src = None if source is None else CounterSource(source)
    if src is not None:
        allowed = set(source_dimensions(src))
        extra = [
            DIMENSION_NAMES[i] for i in range(len(checked)) if checked[i] is not None and i not in allowed
        ]
        if extra:
            raise ValueError(
                f"counter source {src.value!r} does not measure {', '.join(extra)}: give null there"
            )
    return Signature(checked, src)


def shared_dimensions(query: Sequence[int], state: Sequence[int]) -> tuple[int, ...] | None:
    """The dimensions a query and a stored state are compared on, or None when the state is no neighbour:
    the state's own measured dimensions, all of which the query must have measured, and at least
    MIN_SHARED_DIMENSIONS of them (or every one the query measured, when it measured fewer)."""
    wanted = set(query)
    if not state or not set(state) <= wanted:
        return None
    if len(state) < min(MIN_SHARED_DIMENSIONS, len(wanted)):
        return None
    return tuple(state)


def masked_distance(query: Signature, state: Signature) -> tuple[float, int] | None:
    """(d^2, shared): the squared euclidean distance over the shared dimensions, each difference divided
    by the stored state's source scale (`source_scales`: the index the state sits in holds it so scaled),
    and how many dimensions it is over; None when `state` is no neighbour of `query`."""
    shared = shared_dimensions(query.measured, state.measured)
    if shared is None:
        return None
    q, v, scale = query.vector, state.vector, source_scales(state.source)
    return sum(((q[i] - v[i]) / scale[i]) ** 2 for i in shared), len(shared)


def masked_similarity(query: Signature, state: Signature) -> float | None:
    """`similarity` of `masked_distance` in the stored state's source's unit (`similarity_unit`); None
    when `state` is no neighbour of `query`. cypher/nearest_states_by_signature*.cypher compute the same."""
    distance = masked_distance(query, state)
    if distance is None:
        return None
    return similarity(*distance, similarity_unit(state.source))


@dataclass(frozen=True)
class IndexSearch:
    """One vector index a query searches: its name, the query on its dimensions, and the factor that
    turns its squared distances into the similarity's units, 1 / (shared x unit^2) (`similarity`)."""

    source: CounterSource
    index: str
    vector: tuple[float, ...]
    d2_factor: float

    def as_param(self) -> dict[str, object]:
        return {"index": self.index, "vector": list(self.vector), "d2_factor": self.d2_factor}


def index_searches(query: Signature) -> list[IndexSearch]:
    """The per-source vector indexes whose complete states are neighbours of `query` (every dimension of
    the source measured by the query; see `shared_dimensions`), with the query projected onto each and
    scaled as that source's states are (`source_scales`)."""
    measured = query.measured
    out = []
    for source in CounterSource:
        dims = source_dimensions(source)
        if shared_dimensions(measured, dims) is None:
            continue
        scale = source_scales(source)
        vector = tuple(query.vector[i] / scale[i] for i in dims)
        d2_factor = 1.0 / (len(dims) * similarity_unit(source) ** 2)
        out.append(IndexSearch(source, source_index(source), vector, d2_factor))
    return out


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


def _ridge_position(ai: float | None, peaks: TargetPeaks) -> float | None:
    if ai is None or ai < 0 or not peaks.peak_gflops or not peaks.peak_gbps:
        return None
    if ai == 0:
        return 0.0  # no FLOPs at all: the far memory side of any ridge
    if math.isinf(ai):
        return 1.0  # nothing past the last-level cache: the far compute side
    ridge = peaks.peak_gflops / peaks.peak_gbps
    return _clip((math.log2(ai / ridge) + 6.0) / 12.0)


def _launch_share(time_ns: float | None, kind: str) -> float | None:
    if time_ns is None or time_ns <= 0:
        return None
    overhead = LAUNCH_OVERHEAD_NS.get(kind, 2_000.0)
    return _clip(overhead / (overhead + time_ns))


def _achieved(counters: Mapping[str, float]) -> tuple[float | None, float | None]:
    """GFLOP/s and GB/s from explicit counters or from flops, bytes and time."""
    time_ns = _counter(counters, CounterName.TIME_NS)
    flops = _counter(counters, CounterName.FLOPS)
    nbytes = _counter(counters, CounterName.BYTES)
    gflops = _counter(counters, CounterName.GFLOPS)
    gbps = _counter(counters, CounterName.GBPS)
    if gflops is None and flops is not None and time_ns:
        gflops = flops / time_ns
    if gbps is None and nbytes is not None and time_ns:
        gbps = nbytes / time_ns
    return gflops, gbps


def dimension_values(
    source: CounterSource | str, counters: Mapping[str, float], peaks: TargetPeaks
) -> dict[str, float | None]:
    """Every dimension value `counters` give for `source`, before its dimension set filters them, plus
    the candidate readings that are no dimension of their own (`THREAD_SHARE`): what
    `kernelgraph bench signature` judges (docs/counter-signature.md, the drop rule)."""
    source = CounterSource(source)
    counters = with_ncu_names(counters)
    gflops, gbps = _achieved(counters)
    time_ns = _counter(counters, CounterName.TIME_NS)
    values: dict[str, float | None] = {
        "compute_fraction": _ratio(gflops, peaks.peak_gflops),
        "memory_fraction": _ratio(gbps, peaks.peak_gbps),
        "launch_overhead_share": _launch_share(time_ns, peaks.kind),
    }
    if source in (CounterSource.CPU_CACHEGRIND, CounterSource.CPU_TIMING):
        values.update(_cpu_dimensions(counters, peaks))
    elif source in (CounterSource.NVIDIA_NCU, CounterSource.NVIDIA_TIMING, CounterSource.NVIDIA_STATIC):
        values.update(_nvidia_dimensions(counters))
    compute, memory = values["compute_fraction"], values["memory_fraction"]
    if compute is not None and memory is not None:
        values["speed_of_light"] = max(compute, memory)
    return values


def compute_signature(
    source: CounterSource | str, counters: Mapping[str, float], peaks: TargetPeaks
) -> Signature:
    """Map one measurement's raw counters to the signature; see docs/counter-signature.md.

    `counters` are validated ones (a Measurement's or a RetrieveRequest's: every value finite).
    Names (`CounterName`; all optional, what is absent leaves its dimension unmeasured):
    time_ns, flops, bytes, gflops, gbps;
    CPU: threads and cores (else the target's cores); cachegrind: instructions, d1_miss_rate, ll_miss_rate, ll_miss_bytes or
    operational_intensity, counter_scale;
    NVIDIA: sm_throughput_pct, dram_throughput_pct, l1_hit_rate_pct, l2_hit_rate_pct,
    achieved_occupancy_pct, theoretical_occupancy_pct, registers_per_thread, spill_bytes.
    Nsight Compute's raw metric names (`NCU_METRICS`, `NCU_FLOP_METRICS`) are read as the counters
    they stand for. Only the dimensions of `SOURCE_DIMENSIONS[source]` are read; the others stay
    unmeasured.
    """
    source = CounterSource(source)
    values = dimension_values(source, counters, peaks)
    allowed = set(SOURCE_DIMENSIONS[source])
    out: list[float | None] = []
    for name in DIMENSION_NAMES:
        value = values.get(name) if name in allowed else None
        out.append(None if value is None else round(_clip(value), 6))
    return Signature(tuple(out), source)


def _at_timed_size(counters: Mapping[str, float]) -> bool:
    """Were the cache counters simulated on the timed problem itself (not a smaller one, scaled)?"""
    scale = _counter(counters, CounterName.COUNTER_SCALE)
    return scale is None or scale == 1.0


def _operational_intensity(counters: Mapping[str, float]) -> float | None:
    measured = _counter(counters, CounterName.OPERATIONAL_INTENSITY)
    if measured is not None:
        return measured
    flops = _counter(counters, CounterName.FLOPS)
    traffic = _counter(counters, CounterName.LL_MISS_BYTES)
    if flops is None or traffic is None:
        return None
    if traffic <= 0:
        return math.inf if flops > 0 else 0.0
    return flops / traffic


def _cpu_dimensions(counters: Mapping[str, float], peaks: TargetPeaks) -> dict[str, float | None]:
    instructions = _counter(counters, CounterName.INSTRUCTIONS)
    flops = _counter(counters, CounterName.FLOPS)
    issue = None
    if instructions and flops is not None:
        width = _FLOPS_PER_VECTOR_INSTRUCTION.get(peaks.isa or "", 16.0)
        issue = _clip((flops / instructions) / width)
    utilization = _counter(counters, CounterName.CPU_UTILIZATION)
    # The cores the run was given (the backend records them); else the target's.
    cores = _counter(counters, CounterName.CORES) or (float(peaks.cores) if peaks.cores else None)
    thread_share = _ratio(_counter(counters, CounterName.THREADS), cores)
    values: dict[str, float | None] = {
        "issue_efficiency": issue,
        "parallel_efficiency": thread_share,
        THREAD_SHARE: thread_share,
        CPU_TIME_SHARE: None if utilization is None else _clip(utilization),
    }
    # Cache behaviour simulated on a smaller problem (signature 1's counters) does not describe the
    # timed run: those dimensions stay unmeasured.
    if _at_timed_size(counters):
        d1 = _counter(counters, CounterName.D1_MISS_RATE)
        ll = _counter(counters, CounterName.LL_MISS_RATE)
        values["l1_miss_rate"] = None if d1 is None else _clip(d1)
        values["llc_miss_rate"] = None if ll is None else _clip(ll)
        values["ridge_position"] = _ridge_position(_operational_intensity(counters), peaks)
    return values


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
