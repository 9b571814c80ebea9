"""The counter signature (version 3): fixed length, in range, comparable across targets; a dimension
that was not measured is masked (None) and left out of the distance, never imputed."""

from __future__ import annotations

import math

import pytest

from kernelgraph.core.errors import InvalidInput
from kernelgraph.core.models import Measurement, RetrieveRequest, finite_counters, validate
from kernelgraph.core.signature import (
    DIMENSION_NAMES,
    SIGNATURE_DIM,
    SIGNATURE_VERSION,
    SOURCE_DIMENSIONS,
    CounterSource,
    Signature,
    TargetPeaks,
    compute_signature,
    index_searches,
    masked_similarity,
    signature_from_values,
    source_dimensions,
)

CPU = TargetPeaks(kind="cpu", peak_gflops=200.0, peak_gbps=20.0, cores=2, isa="x86-64-v3")
BIG_CPU = TargetPeaks(kind="cpu", peak_gflops=2000.0, peak_gbps=200.0, cores=20, isa="x86-64-v4")
GPU = TargetPeaks(kind="cuda", peak_gflops=67_000.0, peak_gbps=3_350.0)
# What the C backend records for one timed run (agent/backends/c.py, counters.py).
CACHEGRIND = {"time_ns": 2e6, "flops": 4e6, "bytes": 3.2e7, "instructions": 9e6, "d1_miss_rate": 0.2,
              "ll_miss_rate": 0.9, "ll_miss_bytes": 3.0e7, "cpu_utilization": 0.93, "threads": 2,
              "cores": 2, "counter_scale": 1.0}  # fmt: skip


def test_signature_version_is_3() -> None:
    assert SIGNATURE_VERSION == 3
    assert "arithmetic_intensity" not in DIMENSION_NAMES  # nominal and task-constant: dropped
    assert len(set(DIMENSION_NAMES)) == SIGNATURE_DIM


def test_the_cpu_sources_measure_what_the_drop_rule_kept() -> None:
    """Signature 3 (docs/counter-signature.md): redundant and noisy dimensions are no CPU dimension."""
    dropped = {"memory_fraction", "speed_of_light", "llc_miss_rate"}
    for source in (CounterSource.CPU_CACHEGRIND, CounterSource.CPU_TIMING):
        assert not dropped & set(SOURCE_DIMENSIONS[source])
        signature = compute_signature(source, CACHEGRIND, CPU).as_dict()
        assert all(signature[name] is None for name in dropped)
    assert set(SOURCE_DIMENSIONS[CounterSource.CPU_TIMING]) < set(
        SOURCE_DIMENSIONS[CounterSource.CPU_CACHEGRIND]
    )
    # The GPU sources could not be judged on the CPU development set: what they measured in version 2.
    assert {"memory_fraction", "llc_miss_rate", "speed_of_light"} <= set(
        SOURCE_DIMENSIONS[CounterSource.NVIDIA_NCU]
    )


def test_every_source_measures_its_dimensions_and_masks_the_rest() -> None:
    cases = [
        (CounterSource.CPU_CACHEGRIND, CACHEGRIND, CPU),
        (CounterSource.CPU_TIMING, {"time_ns": 2e6, "flops": 4e6, "bytes": 3.2e7, "threads": 1, "cores": 2}, CPU),
        (CounterSource.NVIDIA_STATIC, {"registers_per_thread": 80, "spill_bytes": 0,
                                        "theoretical_occupancy_pct": 37.5, "flops": 1e9, "bytes": 1e8}, GPU),
        (CounterSource.NVIDIA_NCU, {"time_ns": 1e5, "flops": 1e9, "bytes": 1e8, "sm_throughput_pct": 40,
                                     "dram_throughput_pct": 91, "l1_hit_rate_pct": 10, "l2_hit_rate_pct": 55,
                                     "achieved_occupancy_pct": 70, "registers_per_thread": 64, "spill_bytes": 0}, GPU),
        (CounterSource.KERNELBENCH_TIMING, {"time_ns": 1e5}, GPU),
    ]  # fmt: skip
    for source, counters, peaks in cases:
        signature = compute_signature(source, counters, peaks)
        assert len(signature.values) == SIGNATURE_DIM
        assert signature.complete, (source, signature.missing)
        assert signature.measured == source_dimensions(source)
        assert all(0.0 <= v <= 1.0 for v in signature.values if v is not None)
        assert set(signature.missing) == set(DIMENSION_NAMES) - set(SOURCE_DIMENSIONS[source])
        assert signature.source_vector is not None and len(signature.source_vector) == len(signature.measured)


def test_unmeasured_dimensions_are_none_never_a_neutral_value() -> None:
    signature = compute_signature(CounterSource.CPU_TIMING, {"time_ns": 1e6}, CPU)
    values = signature.as_dict()
    assert values["l1_miss_rate"] is None and values["compute_fraction"] is None
    assert values["launch_overhead_share"] is not None
    assert not signature.complete and signature.source_vector is None
    # The CPU measures no register pressure or spills: masked on every CPU source, whatever is sent.
    cpu = compute_signature(CounterSource.CPU_CACHEGRIND, {**CACHEGRIND, "registers_per_thread": 255}, CPU)
    assert cpu.as_dict()["register_pressure"] is None and cpu.as_dict()["spill_pressure"] is None
    assert cpu.vector[DIMENSION_NAMES.index("register_pressure")] == 0.0  # stored form; masked by its dims


def test_cpu_parallel_efficiency_is_the_threads_the_timed_call_used_over_its_cores() -> None:
    """Version 2 read process CPU time / wall / cores, which read 0 for calls too short for the CPU
    clock to advance; version 3 reads the threads the child counted, whatever the CPU time says."""

    def parallel_efficiency(counters: dict[str, float], peaks: TargetPeaks = CPU) -> float | None:
        return compute_signature(CounterSource.CPU_CACHEGRIND, counters, peaks).as_dict()[
            "parallel_efficiency"
        ]

    assert parallel_efficiency({**CACHEGRIND, "threads": 1, "cpu_utilization": 0.0}) == 0.5
    assert parallel_efficiency({**CACHEGRIND, "threads": 2, "cpu_utilization": 0.3}) == 1.0
    assert parallel_efficiency({**CACHEGRIND, "threads": 2, "cores": 4}) == 0.5
    # The run's cores as recorded; without them, the target's; the child could not tell: unmeasured.
    no_cores = {k: v for k, v in CACHEGRIND.items() if k != "cores"}
    assert parallel_efficiency(no_cores) == 1.0
    assert parallel_efficiency(no_cores, TargetPeaks(kind="cpu", peak_gflops=200.0, peak_gbps=20.0)) is None
    assert parallel_efficiency({k: v for k, v in CACHEGRIND.items() if k != "threads"}) is None


def test_cache_counters_of_another_size_do_not_describe_the_timed_run() -> None:
    scaled = {**CACHEGRIND, "counter_scale": 70.0}  # signature 1: simulated on the small inputs
    values = compute_signature(CounterSource.CPU_CACHEGRIND, scaled, CPU).as_dict()
    assert (
        values["l1_miss_rate"] is None
        and values["llc_miss_rate"] is None
        and values["ridge_position"] is None
    )
    assert values["issue_efficiency"] is not None


def test_ridge_position_comes_from_measured_traffic_not_the_task_constant() -> None:
    # The same task (same FLOPs and compulsory bytes) before and after blocking: 16x less LL traffic.
    naive = compute_signature(CounterSource.CPU_CACHEGRIND, {**CACHEGRIND, "ll_miss_bytes": 3.2e8}, CPU)
    blocked = compute_signature(CounterSource.CPU_CACHEGRIND, {**CACHEGRIND, "ll_miss_bytes": 2e7}, CPU)
    assert blocked.as_dict()["ridge_position"] > naive.as_dict()["ridge_position"]  # type: ignore[operator]
    # 4 FLOP/byte past the LL against a ridge of 10: log2(0.4) = -1.32 -> (6 - 1.32) / 12.
    exact = compute_signature(CounterSource.CPU_CACHEGRIND, {**CACHEGRIND, "ll_miss_bytes": 1e6}, CPU)
    assert exact.as_dict()["ridge_position"] == pytest.approx((math.log2(4.0 / 10.0) + 6) / 12, abs=1e-6)
    fits = compute_signature(CounterSource.CPU_CACHEGRIND, {**CACHEGRIND, "ll_miss_bytes": 0.0}, CPU)
    assert fits.as_dict()["ridge_position"] == 1.0  # nothing past the LL: the compute side


def test_masked_similarity_renormalises_over_the_shared_dimensions() -> None:
    full = compute_signature(CounterSource.CPU_CACHEGRIND, CACHEGRIND, CPU)
    timing = compute_signature(CounterSource.CPU_TIMING, CACHEGRIND, CPU)
    assert masked_similarity(full, full) == 1.0
    # The timing state is compared on its 3 dimensions, all measured by the cachegrind query ...
    shifted = signature_from_values([None if v is None else min(1.0, v + 0.1) for v in timing.values])
    d2 = sum((full.vector[i] - shifted.vector[i]) ** 2 for i in shifted.measured)
    assert masked_similarity(full, shifted) == pytest.approx(
        1 / (1 + d2 * SIGNATURE_DIM / len(shifted.measured))
    )
    # ... but a timing query did not measure the cache dimensions a cachegrind state has: no neighbour.
    assert masked_similarity(timing, full) is None
    # Too few shared dimensions say nothing: a time-only state is no neighbour of a full query.
    launch_only = compute_signature(CounterSource.KERNELBENCH_TIMING, {"time_ns": 1e5}, CPU)
    assert masked_similarity(full, launch_only) is None
    assert masked_similarity(launch_only, launch_only) == 1.0


def test_index_searches_cover_exactly_the_sources_a_query_can_place() -> None:
    full = compute_signature(CounterSource.CPU_CACHEGRIND, CACHEGRIND, CPU)
    searches = {s.source: s for s in index_searches(full)}
    assert set(searches) == {CounterSource.CPU_CACHEGRIND, CounterSource.CPU_TIMING}
    timing = searches[CounterSource.CPU_TIMING]
    assert timing.index == "measurement_signature_cpu_timing"
    assert timing.vector == tuple(full.vector[i] for i in source_dimensions(CounterSource.CPU_TIMING))
    assert timing.scale == pytest.approx(SIGNATURE_DIM / len(SOURCE_DIMENSIONS[CounterSource.CPU_TIMING]))


def test_a_signature_given_with_a_dimension_its_source_does_not_measure_is_rejected() -> None:
    values: list[float | None] = [0.5] * SIGNATURE_DIM
    with pytest.raises(ValueError, match="register_pressure"):
        signature_from_values(values, CounterSource.CPU_CACHEGRIND)
    with pytest.raises(InvalidInput) as caught:
        validate(Measurement, {"median_ns": 1e6, "correct": True, "counter_source": "cpu_timing",
                               "signature": values})  # fmt: skip
    assert caught.value.field == "signature" and "l1_miss_rate" in caught.value.message
    assert "memory_fraction" in caught.value.message  # a dimension signature 3 dropped
    with pytest.raises(InvalidInput) as empty:
        validate(RetrieveRequest, {"target": "t", "signature": [None] * SIGNATURE_DIM})
    assert empty.value.field == "signature"
    with pytest.raises(ValueError):
        Signature((0.5,) * (SIGNATURE_DIM - 1))


def test_a_nan_counter_is_left_out_at_the_edge_and_counts_as_missing() -> None:
    counters = finite_counters({"d1_miss_rate": math.nan, "time_ns": 1e6})
    assert counters == {"time_ns": 1e6}
    signature = compute_signature(CounterSource.CPU_CACHEGRIND, counters, CPU)
    assert "l1_miss_rate" in signature.missing


def test_a_measurement_with_a_nan_counter_is_rejected_naming_it() -> None:
    with pytest.raises(InvalidInput) as caught:
        validate(
            Measurement,
            {"median_ns": 1e6, "correct": True, "counter_source": "cpu_timing",
             "counters": {"d1_miss_rate": math.nan}},
        )  # fmt: skip
    assert caught.value.field == "counters.d1_miss_rate"


def test_the_same_bottleneck_on_two_targets_maps_close_together() -> None:
    # A streaming kernel at ~5% of each target's compute peak, all cores busy: absolute GFLOP/s differ 10x.
    small = compute_signature(
        CounterSource.CPU_TIMING,
        {"time_ns": 1e6, "flops": 1e7, "bytes": 1.6e7, "threads": 2, "cores": 2},
        CPU,
    )
    big = compute_signature(
        CounterSource.CPU_TIMING,
        {"time_ns": 1e6, "flops": 1e8, "bytes": 1.6e8, "threads": 20, "cores": 20},
        BIG_CPU,
    )
    compute_bound = compute_signature(
        CounterSource.CPU_TIMING,
        {"time_ns": 1e6, "flops": 1.8e8, "bytes": 1e5, "threads": 1, "cores": 2},
        CPU,
    )
    assert masked_similarity(small, big) == pytest.approx(1.0, abs=0.05)
    assert masked_similarity(small, compute_bound) < 0.5  # type: ignore[operator]
    assert small.as_dict()["compute_fraction"] == pytest.approx(0.05)
