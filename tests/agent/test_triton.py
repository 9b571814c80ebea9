"""The Triton backend: AOT compile + static metrics for sm80/sm90, interpreter correctness, diagnostics."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from kernelgraph.agent.backends.timing import TimingPlan
from kernelgraph.agent.backends.triton import ARCH_LIMITS, TritonBackend, theoretical_occupancy
from kernelgraph.agent.results import Outcome
from kernelgraph.agent.targets import get_target
from kernelgraph.agent.tasks import get_task
from kernelgraph.agent.tasks.base import Task
from kernelgraph.agent.tasks.triton import TASK_MODULES, triton_tasks
from kernelgraph.agent.transforms import Transform


@pytest.fixture(scope="module")
def backend(tmp_path_factory: pytest.TempPathFactory) -> TritonBackend:
    return TritonBackend(
        cache_dir=tmp_path_factory.mktemp("triton-cache"), timeout_s=240, device="interpreter"
    )


def _task(name: str) -> Task:
    return get_task(name, "triton")


def test_registry_lists_every_triton_task() -> None:
    names = [t.name for t in triton_tasks()]
    assert names == list(TASK_MODULES) and len(names) >= 8
    for task in triton_tasks():
        assert all(spec.name in set(Transform) for spec in task.transforms), task.name
        source = task.source("triton", task.baseline_config)
        assert "@triton.jit" in source and "def launch(" in source and "AOT = [" in source


def test_configs_render_different_sources() -> None:
    task = _task("matmul")
    base = task.source("triton", task.baseline_config)
    for spec in task.transforms:
        choice = {k: v[-1] for k, v in spec.params.items()}
        new = spec.apply(task.baseline_config, choice)
        if new is not None:
            assert task.source("triton", new) != base, spec.name


@pytest.mark.parametrize("name", TASK_MODULES)
def test_compiles_for_sm80_and_sm90_and_passes_interpreter(backend: TritonBackend, name: str) -> None:
    task = _task(name)
    source = task.source("triton", task.baseline_config)
    for target in ("cuda-sm80", "cuda-sm90"):
        result = backend.compile(task, source, get_target(target))
        assert result.ok, result.diagnosis
        m, limits = result.static_metrics, ARCH_LIMITS[int(target[-2:])]
        assert 0 < m["registers_per_thread"] <= 255
        assert 0 <= m["shared_mem_bytes"] <= limits.max_smem_per_block
        assert 0 < m["theoretical_occupancy_pct"] <= 100
        assert m["num_warps"] == task.baseline_config["num_warps"]
        assert result.artifact and any(Path(result.artifact).glob("*.cubin"))
    check = backend.check(task, source, "cuda-sm90")
    assert check.outcome == Outcome.KEPT, check.reason


@pytest.mark.parametrize(
    ("name", "config"),
    [
        ("softmax", {"online": True, "BLOCK_N": 128, "persistent": True, "num_stages": 3}),
        ("matmul", {"GROUP_M": 4, "SPLIT_K": 2, "persistent": True}),
        ("reduction", {"atomic": True, "persistent": True}),
        ("elementwise", {"fuse": True}),
    ],
)
def test_strategy_variants_compile_and_pass(
    backend: TritonBackend, name: str, config: dict[str, object]
) -> None:
    task = _task(name)
    source = task.source("triton", {**task.baseline_config, **config})
    assert backend.compile(task, source, "cuda-sm90").ok
    check = backend.check(task, source, "cuda-sm90")
    assert check.correct, check.reason


def test_compile_is_cached_by_content(backend: TritonBackend) -> None:
    task = _task("softmax")
    source = task.source("triton", task.baseline_config)
    first = backend.compile(task, source, "cuda-sm90")
    again = backend.compile(task, source, "cuda-sm90")
    assert first.artifact == again.artifact and first.static_metrics == again.static_metrics


def test_syntax_error_is_located(backend: TritonBackend) -> None:
    task = _task("softmax")
    source = task.source("triton", task.baseline_config).replace("tl.max(x, axis=0))", "tl.max(x, axis=0)")
    result = backend.compile(task, source, "cuda-sm90")
    assert not result.ok and result.diagnostics
    diag = result.diagnostics[0]
    assert "SyntaxError" in diag.message and diag.line is not None


def test_triton_type_error_is_located(backend: TritonBackend) -> None:
    task = _task("softmax")
    good = task.source("triton", task.baseline_config)
    bad = good.replace("e = tl.exp(x - tl.max(x, axis=0))", "e = tl.dot(x, x)")
    assert bad != good
    result = backend.compile(task, bad, "cuda-sm80")
    assert not result.ok
    diag = result.diagnostics[0]
    assert "CompilationError" in diag.message and "rank" in diag.message
    assert diag.line == bad.splitlines().index("        e = tl.dot(x, x)") + 1
    assert diag.column is not None


def test_off_by_one_mask_is_rejected(backend: TritonBackend) -> None:
    task = _task("softmax")
    good = task.source("triton", task.baseline_config)
    bad = good.replace(
        "e / tl.sum(e, axis=0), mask=offs < n_cols)", "e / tl.sum(e, axis=0), mask=offs < n_cols - 1)"
    )
    assert bad != good
    assert backend.compile(task, bad, "cuda-sm90").ok  # compiles fine: only the evaluator can catch it
    check = backend.check(task, bad, "cuda-sm90")
    assert check.outcome == Outcome.INCORRECT and "NaN" in check.reason


def test_input_mutation_is_rejected(backend: TritonBackend) -> None:
    task = _task("elementwise")
    source = task.source("triton", {**task.baseline_config, "fuse": True})
    bad = source.replace(
        "    fused_kernel[grid](x, y, n,", "    x.mul_(1.0000001)\n    fused_kernel[grid](x, y, n,"
    )
    assert bad != source
    check = backend.check(task, bad, "cuda-sm90")
    assert check.outcome == Outcome.INCORRECT and "modified" in check.reason


def test_profile_without_gpu_is_static_and_never_invents_time(backend: TritonBackend) -> None:
    task = _task("rmsnorm")
    prof = backend.profile(task, task.source("triton", task.baseline_config), get_target("cuda-sm90"))
    assert prof.static and prof.counter_source == "nvidia_static" and prof.trials == 0
    assert math.isnan(prof.median_ns)
    assert prof.counters["registers_per_thread"] > 0 and prof.counters["flops"] > 0


def test_occupancy_matches_the_calculator() -> None:
    sm90 = ARCH_LIMITS[90]
    assert theoretical_occupancy(sm90, 32, 4, 0)[0] == 100.0
    pct, blocks, limiter = theoretical_occupancy(sm90, 128, 4, 0)  # 128 regs: 16 warps resident
    assert (pct, blocks, limiter) == (25.0, 4, "registers")
    assert theoretical_occupancy(ARCH_LIMITS[80], 32, 4, 100 * 1024)[2] == "shared_memory"


def test_unknown_target_is_a_diagnostic(backend: TritonBackend) -> None:
    task = _task("softmax")
    result = backend.compile(task, task.source("triton", task.baseline_config), "cpu-x86-64-v3")
    assert not result.ok and "CUDA target" in result.diagnosis


def _has_cuda() -> bool:
    try:
        import torch

        return bool(torch.cuda.is_available())
    except Exception:
        return False


@pytest.mark.gpu
@pytest.mark.skipif(not _has_cuda(), reason="needs an NVIDIA GPU with CUDA")
def test_gpu_check_and_timing() -> None:  # pragma: no cover - needs a GPU
    backend = TritonBackend(device="cuda", timing=TimingPlan(min_trials=10, max_trials=10))
    task = _task("softmax")
    source = task.source("triton", task.baseline_config)
    target = "cuda-sm90"
    assert backend.check(task, source, target).correct
    prof = backend.profile(task, source, target, parent_source=source)
    if not prof.static:
        assert prof.median_ns > 0 and prof.parent_median_ns and prof.counters["time_ns"] == prof.median_ns


def test_gpu_time_beyond_the_peak_is_implausible(
    backend: TritonBackend, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The GPU profile path (faked here: no GPU) applies the same peak check as the C backend."""
    import dataclasses

    from kernelgraph.agent.backends.triton import backend as triton_mod

    real_worker = triton_mod._run_worker

    def worker(request: dict[str, object], *args: object, **kwargs: object) -> dict[str, object]:
        if request["op"] != "profile":
            return real_worker(request, *args, **kwargs)  # type: ignore[arg-type]
        return {"median_ns": 1.0, "iqr_ns": 0.1, "trials": 50, "parent_median_ns": None}  # 1 ns: impossible

    monkeypatch.setattr(triton_mod, "local_cuda_arch", lambda: 90)
    monkeypatch.setattr(triton_mod, "_run_worker", worker)
    target = dataclasses.replace(get_target("cuda-sm90"), peak_gflops=1000.0, peak_gbps=3000.0)
    task = _task("softmax")
    result = backend.profile(task, task.source("triton", task.baseline_config), target)
    assert result.outcome == Outcome.IMPLAUSIBLE, result
    assert "exceeds" in result.reason and math.isnan(result.median_ns)


def test_gpu_speedup_far_beyond_the_parent_is_reverified_as_in_c(
    backend: TritonBackend, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The GPU profile path (faked: no GPU) shares the C backend's re-verification of a suspicious time."""
    from kernelgraph.agent.backends.triton import backend as triton_mod

    real_worker = triton_mod._run_worker
    ops: list[object] = []

    def worker(request: dict[str, object], *args: object, **kwargs: object) -> dict[str, object]:
        ops.append(request["op"])
        if request["op"] != "profile":
            return real_worker(request, *args, **kwargs)  # type: ignore[arg-type]
        assert request["min_trials"] == backend.timing.min_trials  # the shared plan reaches the worker
        return {"median_ns": 1e6, "iqr_ns": 1e4, "trials": 20, "parent_median_ns": 1e8}  # 100x the parent

    monkeypatch.setattr(triton_mod, "local_cuda_arch", lambda: 90)
    monkeypatch.setattr(triton_mod, "_run_worker", worker)
    task = _task("softmax")
    result = backend.profile(task, task.source("triton", task.baseline_config), get_target("cuda-sm90"))
    assert result.outcome == Outcome.KEPT, result
    assert result.reverified and "faster than its parent" in result.reason
    assert ops.count("run") == 1  # the re-verification: one interpreter check on fresh seeds


# The Triton timer, in Triton's interpreter (no GPU needed): the C timer's rules (issue 27).
INTERPRETER_TIMING = TimingPlan(warmup=1, min_trials=4, max_trials=4, budget_s=5.0, verified_calls=3)
LAZY_AFTER_FIRST = """
_launched = [0]
_honest_launch = launch


def launch(x, w, y):
    _launched[0] += 1
    if _launched[0] == 1:  # computes once; later launches leave the first launch's output in place
        _honest_launch(x, w, y)
"""


def test_triton_timer_checks_every_launch_on_its_own_inputs(tmp_path: Path) -> None:
    backend = TritonBackend(
        cache_dir=tmp_path, timeout_s=300, device="interpreter", timing=INTERPRETER_TIMING
    )
    task = _task("rmsnorm")
    source = task.source("triton", task.baseline_config)
    inputs = task.make_inputs(3, True)
    response, timed = backend.time_launches(task, source, None, inputs, "interpreter")
    assert timed.correct, timed.reason
    kept = response["timed_calls"]
    assert sorted(kept) == list(range(1, 1 + response["trials"])) and response["trials"] >= 4
    assert len({d for call in kept.values() for d in call["digests"][:1]}) == len(
        kept
    )  # distinct x per launch
    # A launch that works only the first time: its stale output was all the old timer ever saw.
    _, lazy = backend.time_launches(task, source + LAZY_AFTER_FIRST, None, inputs, "interpreter")
    assert lazy.outcome == Outcome.INCORRECT and "NaN" in lazy.reason, lazy.reason
