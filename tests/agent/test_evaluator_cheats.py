"""Every known harness cheat (tests/agent/cheats/*.c, written for rmsnorm) must be rejected.

Cheats that need a forbidden symbol or static storage (exit, pthreads, a pointer-keyed cache) are
now refused by admission before they run; tests/agent/test_red_team.py also runs them past
admission to check the runtime defenses still catch them."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

from kernelgraph.agent.backends.c import CBackend
from kernelgraph.agent.evaluator import RunReport, RunStatus, check, digest, impossibility, suspicion
from kernelgraph.agent.results import Outcome
from kernelgraph.agent.targets import Target
from kernelgraph.agent.tasks import get_task

CHEATS = Path(__file__).with_name("cheats")

EXPECTED = {
    "wrong_result": {Outcome.INCORRECT},
    "output_untouched": {Outcome.INCORRECT},
    "all_zeros": {Outcome.INCORRECT},
    "input_mutated": {Outcome.INCORRECT},
    "segfault": {Outcome.CRASHED},
    "infinite_loop": {Outcome.TIMEOUT},
    "exit_call": {Outcome.REJECTED},
    "nan_output": {Outcome.INCORRECT},
    "pointer_cache": {Outcome.REJECTED},
    "row0_only": {Outcome.INCORRECT},
    "background_thread": {Outcome.REJECTED},  # pthread_create is not an allowed symbol
}
REASON_HINT = {
    "input_mutated": "modified input",
    "nan_output": "NaN",
    "output_untouched": "NaN",
    "row0_only": "NaN",
    "pointer_cache": "writable global or static data",
    "segfault": "SIGSEGV",
    "exit_call": "`exit`",
    "background_thread": "`pthread_create`",
    "infinite_loop": "did not finish",
}


@pytest.fixture(scope="module")
def strict_backend(c_cache: Path) -> CBackend:
    return CBackend(cache_dir=c_cache, check_timeout_s=3.0, counters=False)


def test_every_fixture_is_covered() -> None:
    assert {p.stem for p in CHEATS.glob("*.c")} == set(EXPECTED) | {"correct"}


def test_honest_control_passes(strict_backend: CBackend, cpu_target: Target) -> None:
    result = strict_backend.check(get_task("rmsnorm"), (CHEATS / "correct.c").read_text(), cpu_target)
    assert result.correct, result.reason


@pytest.mark.parametrize("cheat", sorted(EXPECTED))
def test_cheat_is_caught(cheat: str, strict_backend: CBackend, cpu_target: Target) -> None:
    pid = os.getpid()
    result = strict_backend.check(get_task("rmsnorm"), (CHEATS / f"{cheat}.c").read_text(), cpu_target)
    assert os.getpid() == pid  # the test process survived
    assert result.outcome in EXPECTED[cheat], result.reason
    if cheat in REASON_HINT:
        assert REASON_HINT[cheat] in result.reason, result.reason


def test_cheat_in_profile_is_caught(strict_backend: CBackend, cpu_target: Target) -> None:
    """Profiling applies the same admission: a pointer-keyed cache never gets timed."""
    task = get_task("rmsnorm")
    result = strict_backend.profile(task, (CHEATS / "pointer_cache.c").read_text(), cpu_target)
    assert result.outcome == Outcome.REJECTED, result.reason
    assert result.evaluator_version is not None and result.sandbox.startswith("bubblewrap")


def _python_runner(task_name: str, *, mutate: bool = False, stale: bool = False):  # type: ignore[no-untyped-def]
    task = get_task(task_name)

    def run(input_sets, specs):  # type: ignore[no-untyped-def]
        outputs, digests = [], []
        first = task.reference(input_sets[0])
        for inputs in input_sets:
            outputs.append(first if stale else task.reference(inputs))
            if mutate:
                inputs[next(iter(inputs))].ravel()[0] += 1
            digests.append({k: digest(v) for k, v in inputs.items()})
        return RunReport(RunStatus.OK, tuple(outputs), tuple(digests))

    return task, run


def test_evaluator_is_backend_agnostic() -> None:
    task, honest = _python_runner("softmax")
    assert check(task, honest).correct
    task, mutating = _python_runner("softmax", mutate=True)
    assert check(task, mutating).outcome == Outcome.INCORRECT
    task, stale = _python_runner("softmax", stale=True)
    assert check(task, stale).outcome == Outcome.INCORRECT


def test_evaluator_requires_three_input_sets() -> None:
    task, honest = _python_runner("softmax")
    with pytest.raises(ValueError):
        check(task, honest, seeds=(1, 2))


def test_impossible_speed_is_named_and_suspicious_speed_is_flagged() -> None:
    task = get_task("matmul")
    inputs = task.make_inputs(0, False)
    assert "GFLOP/s" in impossibility(task, inputs, 1e3, peak_gflops=100.0, peak_gbps=10.0)  # 226 TFLOP/s
    assert not impossibility(task, inputs, 1e7, peak_gflops=100.0, peak_gbps=10.0)
    assert "parent" in suspicion(1e7, 2e8)
    assert not suspicion(1e7, 5e7)
    assert np.isfinite(task.flops(inputs))


def _timed_snapshot(task_name: str, calls: list[int], seed: int, stale_from: int | None = None):  # type: ignore[no-untyped-def]
    """What an honest timing child keeps for `calls`; with `stale_from`, every kept output is that
    call's (a cache that returns what it computed once)."""
    from kernelgraph.agent.backends._child import variant_factors, write_variant

    task = get_task(task_name)
    base = task.make_inputs(1, True)
    factors = variant_factors(max(a.size for a in base.values()), 100, seed)

    def variant(call: int) -> dict[str, np.ndarray]:
        out = {}
        for name, array in base.items():
            out[name] = np.empty_like(array)
            write_variant(array, factors, call, out[name])
        return out

    kept = {}
    for call in calls:
        inputs = variant(call)
        outputs = task.reference(variant(stale_from) if stale_from is not None else inputs)
        kept[call] = {
            "outputs": [np.asarray(v, dtype=task.output_dtype(k)) for k, v in outputs.items()],
            "digests": [digest(a) for a in inputs.values()],
        }
    extra = {"timed_calls": kept, "variant_seed": seed, "calls": 100, "sampled_calls": calls}
    return task, base, extra


def test_timed_outputs_are_checked_against_each_calls_own_inputs() -> None:
    from kernelgraph.agent.backends.sandbox import verify_timed_calls

    task, base, extra = _timed_snapshot("rmsnorm", [3, 7, 11], seed=42)
    assert verify_timed_calls(task, base, extra).correct
    task, base, stale = _timed_snapshot("rmsnorm", [3, 7, 11], seed=42, stale_from=2)
    verdict = verify_timed_calls(task, base, stale)
    assert verdict.outcome == Outcome.INCORRECT and "timed call 3" in verdict.reason
    swapped = {**extra, "sampled_calls": [4, 7, 11]}  # the child kept other calls than those drawn
    assert verify_timed_calls(task, base, swapped).outcome == Outcome.CRASHED
