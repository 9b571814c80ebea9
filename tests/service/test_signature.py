"""The counter signature: fixed length, finite, in range, comparable across targets, missing made explicit."""

from __future__ import annotations

import math

import pytest

from kernelgraph.client.errors import InvalidInput
from kernelgraph.client.models import Measurement, finite_counters, validate
from kernelgraph.client.signature import (
    DIMENSION_NAMES,
    SIGNATURE_DIM,
    CounterSource,
    TargetPeaks,
    compute_signature,
)

CPU = TargetPeaks(kind="cpu", peak_gflops=200.0, peak_gbps=20.0, cores=2, isa="x86-64-v3")
BIG_CPU = TargetPeaks(kind="cpu", peak_gflops=2000.0, peak_gbps=200.0, cores=20, isa="x86-64-v4")
GPU = TargetPeaks(kind="cuda", peak_gflops=67_000.0, peak_gbps=3_350.0)


def test_every_source_gives_a_full_finite_vector_in_range_and_never_zero() -> None:
    cases = [
        (CounterSource.CPU_CACHEGRIND, {"time_ns": 2e6, "flops": 4e6, "bytes": 3.2e7, "instructions": 9e6,
                                         "d1_miss_rate": 0.2, "ll_miss_rate": 0.9, "threads": 2}, CPU),
        (CounterSource.NVIDIA_STATIC, {"registers_per_thread": 80, "spill_bytes": 0,
                                        "theoretical_occupancy_pct": 37.5, "flops": 1e9, "bytes": 1e8}, GPU),
        (CounterSource.NVIDIA_NCU, {"time_ns": 1e5, "sm_throughput_pct": 40, "dram_throughput_pct": 91,
                                     "l1_hit_rate_pct": 10, "l2_hit_rate_pct": 55, "achieved_occupancy_pct": 70}, GPU),
        (CounterSource.CPU_TIMING, {}, CPU),
    ]  # fmt: skip
    for source, counters, peaks in cases:
        signature = compute_signature(source, counters, peaks)
        assert len(signature.vector) == SIGNATURE_DIM
        assert all(math.isfinite(v) and 0.0 <= v <= 1.0 for v in signature.vector)
        assert any(v > 0 for v in signature.vector)


def test_missing_counters_are_listed_not_silently_zero() -> None:
    signature = compute_signature(CounterSource.CPU_TIMING, {"time_ns": 1e6}, CPU)
    assert "l1_miss_rate" in signature.missing and "compute_fraction" in signature.missing
    assert signature.as_dict()["l1_miss_rate"] == 0.5  # the documented neutral value
    assert "launch_overhead_share" not in signature.missing


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
    # A streaming kernel at ~80% of each target's bandwidth: absolute GB/s differ by 10x.
    small = compute_signature(
        CounterSource.CPU_TIMING, {"time_ns": 1e6, "flops": 1e6, "bytes": 1.6e7, "threads": 2}, CPU
    )
    big = compute_signature(
        CounterSource.CPU_TIMING, {"time_ns": 1e6, "flops": 1e7, "bytes": 1.6e8, "threads": 20}, BIG_CPU
    )
    compute_bound = compute_signature(
        CounterSource.CPU_TIMING, {"time_ns": 1e6, "flops": 1.8e8, "bytes": 1e5, "threads": 2}, CPU
    )
    distance = lambda a, b: math.dist(a.vector, b.vector)  # noqa: E731
    assert distance(small, big) < 0.1
    assert distance(small, compute_bound) > 0.5
    assert small.as_dict()["memory_fraction"] == pytest.approx(0.8)


def test_dimension_names_are_unique() -> None:
    assert len(set(DIMENSION_NAMES)) == SIGNATURE_DIM
