"""The counter signature (version 4): fixed length, in range, comparable across targets; a dimension
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
    SOURCE_SCALES_PARAM,
    SOURCE_UNITS_PARAM,
    CounterSource,
    Signature,
    TargetPeaks,
    compute_signature,
    index_searches,
    masked_similarity,
    signature_from_values,
    similarity_unit,
    source_dimensions,
    source_scales,
)

CPU = TargetPeaks(kind="cpu", peak_gflops=200.0, peak_gbps=20.0, cores=2, isa="x86-64-v3")
BIG_CPU = TargetPeaks(kind="cpu", peak_gflops=2000.0, peak_gbps=200.0, cores=20, isa="x86-64-v4")
GPU = TargetPeaks(kind="cuda", peak_gflops=67_000.0, peak_gbps=3_350.0)
# What the C backend records for one timed run (agent/backends/c.py, counters.py).
CACHEGRIND = {"time_ns": 2e6, "flops": 4e6, "bytes": 3.2e7, "instructions": 9e6, "d1_miss_rate": 0.2,
              "ll_miss_rate": 0.9, "ll_miss_bytes": 3.0e7, "cpu_utilization": 0.93, "threads": 2,
              "cores": 2, "counter_scale": 1.0}  # fmt: skip
# What Nsight Compute gives for one GPU run (core/signature.py NCU_METRICS, as KernelGraph names them).
GPU_NCU = {"time_ns": 1e5, "flops": 1e9, "bytes": 1e8, "sm_throughput_pct": 40.0, "dram_throughput_pct": 60.0,
           "l1_hit_rate_pct": 50.0, "l2_hit_rate_pct": 70.0, "achieved_occupancy_pct": 45.0,
           "registers_per_thread": 64, "spill_bytes": 0}  # fmt: skip


def test_signature_version_is_4() -> None:
    assert SIGNATURE_VERSION == 4
    assert "arithmetic_intensity" not in DIMENSION_NAMES  # nominal and task-constant: dropped
    assert len(set(DIMENSION_NAMES)) == SIGNATURE_DIM


def test_the_cpu_sources_measure_what_the_drop_rule_kept() -> None:
    """Signature 4 (docs/counter-signature.md): the drop rule on two tasks dropped speed_of_light (the
    same number as memory_fraction there) and kept memory_fraction and llc_miss_rate."""
    dropped = {"speed_of_light"}
    for source in (CounterSource.CPU_CACHEGRIND, CounterSource.CPU_TIMING):
        assert not dropped & set(SOURCE_DIMENSIONS[source])
        signature = compute_signature(source, CACHEGRIND, CPU).as_dict()
        assert all(signature[name] is None for name in dropped)
        assert signature["memory_fraction"] == pytest.approx(3.2e7 / 2e6 / 20.0)
    cachegrind = compute_signature(CounterSource.CPU_CACHEGRIND, CACHEGRIND, CPU).as_dict()
    assert cachegrind["llc_miss_rate"] == pytest.approx(0.9)
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
    scale = source_scales(CounterSource.CPU_TIMING)
    assert timing.vector == tuple(
        full.vector[i] / scale[i] for i in source_dimensions(CounterSource.CPU_TIMING)
    )
    # The CPU sources' unit is 1 scaled unit: the index's squared distance is divided by the shared count.
    assert timing.d2_factor == pytest.approx(1 / len(SOURCE_DIMENSIONS[CounterSource.CPU_TIMING]))


def test_a_signature_given_with_a_dimension_its_source_does_not_measure_is_rejected() -> None:
    values: list[float | None] = [0.5] * SIGNATURE_DIM
    with pytest.raises(ValueError, match="register_pressure"):
        signature_from_values(values, CounterSource.CPU_CACHEGRIND)
    with pytest.raises(InvalidInput) as caught:
        validate(Measurement, {"median_ns": 1e6, "correct": True, "counter_source": "cpu_timing",
                               "signature": values})  # fmt: skip
    assert caught.value.field == "signature" and "l1_miss_rate" in caught.value.message
    assert "speed_of_light" in caught.value.message  # a dimension signature 3 and 4 dropped
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


def test_the_cpu_sources_are_scaled_by_their_kept_dimensions_spreads_and_the_others_not() -> None:
    cpu = source_scales(CounterSource.CPU_CACHEGRIND)
    assert cpu == source_scales(CounterSource.CPU_TIMING)
    kept = source_dimensions(CounterSource.CPU_CACHEGRIND)
    # The standardisation rule's floor (docs/counter-signature.md): no kept dimension below 0.01.
    assert all(cpu[i] >= 0.01 for i in kept) and any(cpu[i] != 1.0 for i in kept)
    assert all(cpu[i] == 1.0 for i in range(SIGNATURE_DIM) if i not in kept)
    for source in (CounterSource.NVIDIA_NCU, CounterSource.NVIDIA_TIMING, CounterSource.NVIDIA_STATIC,
                   CounterSource.KERNELBENCH_TIMING, None):  # fmt: skip
        assert source_scales(source) == (1.0,) * SIGNATURE_DIM
    assert {s.value: list(source_scales(s)) for s in CounterSource} == SOURCE_SCALES_PARAM


def test_the_distance_is_taken_over_values_scaled_by_the_stored_states_source() -> None:
    query = compute_signature(CounterSource.CPU_CACHEGRIND, CACHEGRIND, CPU)
    state = compute_signature(
        CounterSource.CPU_CACHEGRIND, {**CACHEGRIND, "time_ns": 3e6, "d1_miss_rate": 0.25}, CPU
    )
    scale = source_scales(CounterSource.CPU_CACHEGRIND)
    d2 = sum(((query.vector[i] - state.vector[i]) / scale[i]) ** 2 for i in state.measured)
    raw = sum((query.vector[i] - state.vector[i]) ** 2 for i in state.measured)
    assert d2 != pytest.approx(raw)
    assert masked_similarity(query, state) == pytest.approx(1 / (1 + d2 / len(state.measured)))
    # The same values stored as a signature without a source (a client's list) are compared unscaled,
    # in the unit of the sources nothing judged.
    unsourced = signature_from_values(state.values)
    assert masked_similarity(query, unsourced) == pytest.approx(
        1 / (1 + raw * SIGNATURE_DIM / len(state.measured))
    )
    # An NVIDIA state keeps scale 1 (and its unit: the next test but one).


def test_the_index_sees_the_vector_masked_similarity_scores() -> None:
    """One definition: the per-source vector a state is indexed by and the query projected for that index
    give, by the index's euclidean score 1 / (1 + d^2) and the search's factor into the similarity's
    units (as cypher/nearest_states_by_signature.cypher converts it), exactly `masked_similarity`."""
    query = compute_signature(CounterSource.CPU_CACHEGRIND, CACHEGRIND, CPU)
    gpu_query = compute_signature(CounterSource.NVIDIA_NCU, GPU_NCU, GPU)
    for near, source, counters, peaks in (
        (query, CounterSource.CPU_CACHEGRIND, {**CACHEGRIND, "time_ns": 5e6, "ll_miss_bytes": 1e6, "threads": 1}, CPU),
        (query, CounterSource.CPU_TIMING, {**CACHEGRIND, "time_ns": 9e5}, CPU),
        (gpu_query, CounterSource.NVIDIA_NCU, {**GPU_NCU, "l2_hit_rate_pct": 80.0, "spill_bytes": 64}, GPU),
    ):  # fmt: skip
        state = compute_signature(source, counters, peaks)
        assert state.complete and state.source_vector is not None
        search = next(s for s in index_searches(near) if s.source == source)
        d2 = sum((q - v) ** 2 for q, v in zip(search.vector, state.source_vector, strict=True))
        index_score = 1.0 / (1.0 + d2)
        converted = 1.0 / (1.0 + (1.0 / index_score - 1.0) * search.d2_factor)
        assert converted == pytest.approx(masked_similarity(near, state))
        assert masked_similarity(near, state) != 1.0


def test_a_cpu_state_one_spread_away_scores_one_half_and_the_unjudged_sources_are_unchanged() -> None:
    """The similarity's unit (docs/counter-signature.md): a CPU state one spread (its scale) away on every
    shared dimension has similarity 0.5, whatever the number of dimensions; a state of a source nothing
    judged scores 1 / (1 + d^2 x SIGNATURE_DIM / n), as before the unit was chosen."""
    for source in (CounterSource.CPU_CACHEGRIND, CounterSource.CPU_TIMING):
        dims, scale = source_dimensions(source), source_scales(source)
        query = signature_from_values([0.5 if i in dims else None for i in range(SIGNATURE_DIM)], source)
        away = signature_from_values(
            [0.5 + scale[i] if i in dims else None for i in range(SIGNATURE_DIM)], source
        )
        assert masked_similarity(query, away) == pytest.approx(0.5)
        half = signature_from_values(
            [0.5 + scale[i] / 2 if i in dims else None for i in range(SIGNATURE_DIM)], source
        )
        assert masked_similarity(query, half) == pytest.approx(0.8)  # 1 / (1 + 1/4)
    a = compute_signature(CounterSource.NVIDIA_NCU, GPU_NCU, GPU)
    b = compute_signature(CounterSource.NVIDIA_NCU, {**GPU_NCU, "l2_hit_rate_pct": 80.0}, GPU)
    d2 = sum((a.vector[i] - b.vector[i]) ** 2 for i in b.measured)  # unscaled: scale 1
    assert d2 > 0 and masked_similarity(a, b) == pytest.approx(1 / (1 + d2 * SIGNATURE_DIM / len(b.measured)))
    for source in (CounterSource.NVIDIA_NCU, CounterSource.NVIDIA_TIMING, CounterSource.NVIDIA_STATIC,
                   CounterSource.KERNELBENCH_TIMING, None):  # fmt: skip
        assert similarity_unit(source) ** 2 == pytest.approx(1 / SIGNATURE_DIM)
    assert {s.value: similarity_unit(s) for s in CounterSource} == SOURCE_UNITS_PARAM
