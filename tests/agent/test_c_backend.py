"""The C backend: located compile errors, honest profiles, and real speedups from transforms."""

from __future__ import annotations

from pathlib import Path

from kernelgraph.agent.backends.base import Backend
from kernelgraph.agent.backends.bubblewrap import Sandbox
from kernelgraph.agent.backends.c import CBackend, parse_diagnostics
from kernelgraph.agent.backends.timing import TimingPlan
from kernelgraph.agent.results import Outcome
from kernelgraph.agent.targets import Target, get_target
from kernelgraph.agent.tasks import get_task
from kernelgraph.agent.tasks.matmul import BASELINE, BEST_KNOWN
from tests.prerequisites import unavailable

SIGNATURE_COUNTERS = {
    "time_ns", "flops", "bytes", "gflops", "gbps", "arithmetic_intensity", "threads",
    "instructions", "d1_miss_rate", "ll_miss_rate",
}  # fmt: skip


def test_is_a_backend(backend: CBackend) -> None:
    assert isinstance(backend, Backend)


def test_compile_error_is_located(backend: CBackend, cpu_target: Target) -> None:
    source = "void kernel(const float* x, float* y, int n) {\n    int i = 0\n    y[i] = x[i];\n}\n"
    result = backend.compile(get_task("reduction"), source, cpu_target)
    assert not result.ok
    first = result.diagnostics[0]
    assert first.severity == "error" and first.line in (2, 3) and first.column is not None
    assert "expected" in first.message


def test_missing_kernel_symbol(backend: CBackend, cpu_target: Target) -> None:
    result = backend.compile(get_task("reduction"), "void not_kernel(void) {}\n", cpu_target)
    assert not result.ok and "kernel" in result.diagnosis


def test_parse_diagnostics() -> None:
    diags = parse_diagnostics("k.c:7:12: warning: unused\nk.c:9:3: error: boom\n")
    assert (diags[0].line, diags[0].column, diags[0].message) == (9, 3, "boom")


def test_check_reports_compile_error(backend: CBackend, cpu_target: Target) -> None:
    assert backend.check(get_task("reduction"), "int x = ;", cpu_target).outcome == Outcome.COMPILE_ERROR


def test_unavailable_target_is_a_compile_error(backend: CBackend) -> None:
    from dataclasses import replace

    target = replace(get_target("cpu-x86-64-v2", measure=False), available=False, unavailable_reason="test")
    assert not backend.compile(get_task("reduction"), "void kernel(void) {}", target).ok


def test_profile_has_timing_and_counters(c_cache: Path, cpu_target: Target) -> None:
    task = get_task("elementwise_chain")
    profiler = CBackend(cache_dir=c_cache, timing=TimingPlan(budget_s=1.0))
    parent = task.source("c", task.baseline_config)
    child = task.source("c", {**task.baseline_config, "fuse": True, "simd": True})
    result = profiler.profile(task, child, cpu_target, parent_source=parent)
    assert result.outcome == Outcome.KEPT, result.reason
    assert result.trials >= 20 and result.median_ns > 0 and result.iqr_ns >= 0
    assert result.parent_median_ns and result.parent_median_ns > 0
    assert set(result.counters) >= SIGNATURE_COUNTERS
    if result.counter_source == "cpu_cachegrind":
        assert 0.0 <= result.counters["d1_miss_rate"] <= 1.0
        assert result.tool_versions["counter_build_isa"] == "x86-64-v2"
    else:
        assert result.counter_source == "cpu_timing"


def test_profile_of_crashing_kernel_is_an_outcome(backend: CBackend, cpu_target: Target) -> None:
    source = "void kernel(const float* x, float* y, int n) { *(volatile int*)0 = n; }\n"
    result = backend.profile(
        get_task("elementwise_chain"), source.replace("float* y", "const float* z, float* y"), cpu_target
    )
    assert result.outcome == Outcome.CRASHED and result.trials == 0


def test_cachegrind_uses_v3_build_for_avx512(c_cache: Path) -> None:
    from kernelgraph.agent.backends.counters import cachegrind_counters, valgrind_version

    if not valgrind_version():
        unavailable("valgrind is not installed")
    target = get_target("cpu-x86-64-v4", measure=False)
    task = get_task("reduction")
    report = cachegrind_counters(
        task, task.source("c", {"acc": 4, "simd": True, "parallel": True}), target, sandbox=Sandbox()
    )
    assert report.source == "cpu_cachegrind", report.note
    assert report.tool_versions["counter_build_isa"] == "x86-64-v3"
    assert report.counters["instructions"] > 0


def test_matmul_best_config_beats_naive_by_2x(c_cache: Path) -> None:
    target = get_target("cpu-x86-64-v3")
    if not target.available:
        unavailable(f"x86-64-v3 is unavailable: {target.unavailable_reason}")
    task = get_task("matmul")
    profiler = CBackend(cache_dir=c_cache, counters=False, timing=TimingPlan(warmup=1, budget_s=1.0))
    result = profiler.profile(
        task, task.source("c", BEST_KNOWN), target, parent_source=task.source("c", BASELINE)
    )
    assert result.outcome == Outcome.KEPT, result.reason
    assert result.parent_median_ns is not None
    speedup = result.parent_median_ns / result.median_ns
    assert speedup > 2.0, f"best matmul only {speedup:.2f}x over naive"
