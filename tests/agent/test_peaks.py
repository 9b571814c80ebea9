"""The targets' peaks are true upper bounds: nothing real runs faster, OpenBLAS's sgemm and a numpy
copy included; the roofline's least time mixes cache levels by what each holds; the implausibility
bound is the fastest level's bandwidth."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from kernelgraph.agent.evaluator import MAX_LEVEL_BANDWIDTH_FRACTION, impossibility
from kernelgraph.agent.target import Target
from kernelgraph.agent.targets import (
    MEMORY_LEVELS,
    get_target,
    host_caches,
    level_bounds,
    probe_working_sets,
    upper_bounds,
)
from kernelgraph.agent.tasks import get_task


@pytest.fixture(scope="module")
def native() -> Target:
    target = get_target("cpu-native")
    if not target.available or not target.peak_gflops:
        pytest.skip("no measured native peaks on this host")
    return target


def _best_seconds(fn: Callable[[], object], repeats: int) -> float:
    best = float("inf")
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def test_openblas_sgemm_never_exceeds_the_flop_peak(native: Target) -> None:
    """numpy's matmul is OpenBLAS's sgemm (whatever kernel this environment makes it pick)."""
    n = 1024
    a, b = (np.random.default_rng(s).standard_normal((n, n)).astype(np.float32) for s in (1, 2))
    a @ b  # warm: threads started, pages touched
    gflops = 2.0 * n**3 / _best_seconds(lambda: a @ b, 5) / 1e9
    assert gflops < native.peak_gflops, (gflops, native.peak_gflops)


def test_numpy_copy_never_exceeds_any_level_peak(native: Target) -> None:
    """A copy of a working set sized for each level (read + written bytes, as the tasks count)
    stays below that level's bandwidth, and so below the implausibility bound."""
    sets = probe_working_sets(1, {k: (v, 1) for k, v in native.cache_bytes.items()})
    for level in MEMORY_LEVELS:
        # Half the probe's own working set each for source and destination: a smaller "memory" set
        # streams faster on this VM, whose host cache is larger than the L3 it reports (agent/targets.py).
        size = sets[level] // 8 * 4
        src = np.ones(size // 4, dtype=np.float32)
        dst = np.empty_like(src)
        np.copyto(dst, src)
        gbps = (
            2.0
            * src.nbytes
            / _best_seconds(lambda dst=dst, src=src: np.copyto(dst, src), 20 if size < 1 << 24 else 3)
            / 1e9
        )
        # Within the evaluator's margin for the probes' own timing noise. A numpy copy is a memcpy, whose
        # non-temporal stores beat the probe's plain-store copy past the caches until probe 4 timed them.
        bound = MAX_LEVEL_BANDWIDTH_FRACTION * native.bandwidth_gbps[level]
        assert gbps < bound, (level, gbps, native.bandwidth_gbps)


def test_the_peaks_grow_with_the_isa_and_the_levels_slow_down_outward(native: Target) -> None:
    v2, v3 = get_target("cpu-x86-64-v2"), get_target("cpu-x86-64-v3")
    assert v2.peak_gflops and v3.peak_gflops and v2.peak_gflops < v3.peak_gflops <= 1.1 * native.peak_gflops
    levels = [native.bandwidth_gbps[level] for level in MEMORY_LEVELS]
    assert levels == sorted(levels, reverse=True) and native.peak_gbps == native.bandwidth_gbps["memory"]


def test_a_level_read_slower_than_one_beyond_it_is_bounded_by_that_one() -> None:
    """The CI failure of 2026-12-02: a busy host's LLC probe read 20.4 GB/s, memory's 27.9."""
    measured = {"L1": 463.6, "L2": 174.4, "LLC": 20.4, "memory": 27.9}
    assert level_bounds(measured) == {"L1": 463.6, "L2": 174.4, "LLC": 27.9, "memory": 27.9}
    assert level_bounds({"L2": 10.0, "L1": 5.0}) == {"L1": 10.0, "L2": 10.0}  # fastest level first
    assert level_bounds({"L1": 400.0, "memory": 10.0}) == {"L1": 400.0, "memory": 10.0}


def test_cache_sizes_are_read_from_sysfs(tmp_path: Path) -> None:
    for index, (level, kind, size, shared) in enumerate(
        [(1, "Data", "48K", "0"), (1, "Instruction", "32K", "0"), (2, "Unified", "1024K", "0"),
         (3, "Unified", "32768K", "0-7")]
    ):  # fmt: skip
        folder = tmp_path / f"index{index}"
        folder.mkdir()
        for name, value in (("level", level), ("type", kind), ("size", size), ("shared_cpu_list", shared)):
            (folder / name).write_text(f"{value}\n")
    assert host_caches(tmp_path) == {"L1": (48 << 10, 1), "L2": (1 << 20, 1), "LLC": (32 << 20, 8)}
    sets = probe_working_sets(2, host_caches(tmp_path))
    assert sets["L1"] == 24 << 10 and sets["LLC"] == 8 << 20 and sets["memory"] >= 4 * (32 << 20) // 2
    assert host_caches(tmp_path / "absent") == {}


def _levels() -> Target:
    return Target(name="t", kind="cpu", arch="x", peak_gflops=100.0, peak_gbps=10.0,
                  bandwidth_gbps={"L1": 400.0, "L2": 200.0, "LLC": 50.0, "memory": 10.0},
                  cache_bytes={"L1": 1000, "L2": 10_000, "LLC": 100_000})  # fmt: skip


def test_the_roofline_least_time_mixes_levels_by_what_they_hold() -> None:
    target = _levels()
    assert target.attainable_ns(0.0, 800) == pytest.approx(800 / 400)
    # 1000 bytes from L1, 10000 from L2, 4000 from the LLC (each level counted whole: a least time)
    assert target.attainable_ns(0.0, 15_000) == pytest.approx(1000 / 400 + 10_000 / 200 + 4000 / 50)
    assert target.attainable_ns(1e6, 800) == pytest.approx(1e6 / 100)  # compute bound
    assert Target(name="g", kind="cuda", arch="sm_90").attainable_ns(1.0, 1.0) is None


def test_the_implausibility_bound_is_the_fastest_level() -> None:
    target = _levels()
    task = get_task("elementwise_chain")
    inputs = task.make_inputs(0, True)
    moved = task.bytes_moved(inputs)
    assert target.max_gbps == 400.0
    at = lambda gbps: impossibility(  # noqa: E731
        task, inputs, moved / gbps, peak_gflops=None, peak_gbps=target.max_gbps
    )
    assert at(300.0) == ""  # far above memory, but a cache-resident kernel may stream so
    assert "fastest-level" in at(500.0)
    datasheet = Target(name="g", kind="cuda", arch="sm_90", peak_gbps=1000.0)
    assert datasheet.max_gbps == 8000.0  # only DRAM known: caches may beat it


def test_measuring_again_keeps_the_larger_of_each_peak() -> None:
    """A probe on a busy machine reads low: refreshing never lowers an upper bound."""
    old = {
        "gflops": {"cpu-native": 500.0},
        "gbps_levels": {"L1": 900.0, "memory": 40.0},
        "load_averages": [0.3],
    }
    new = {
        "gflops": {"cpu-native": 450.0},
        "gbps_levels": {"L1": 1000.0, "memory": 8.0},
        "load_averages": [21.0],
    }
    merged = upper_bounds(old, new)
    assert merged["gflops"] == {"cpu-native": 500.0} and merged["gbps_levels"] == {
        "L1": 1000.0,
        "memory": 40.0,
    }
    assert merged["gbps"] == 40.0 and merged["load_averages"] == [0.3, 21.0]
