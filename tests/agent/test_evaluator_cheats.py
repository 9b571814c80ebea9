"""Every known harness cheat (tests/agent/cheats/*.c, written for rmsnorm) must be rejected."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

from kernelgraph.agent.backends.c import CBackend
from kernelgraph.agent.evaluator import RunReport, RunStatus, check, digest, implausibility
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
    "exit_call": {Outcome.CRASHED},
    "nan_output": {Outcome.INCORRECT},
    "pointer_cache": {Outcome.INCORRECT},
    "row0_only": {Outcome.INCORRECT},
    # The detached thread has not written yet when outputs are snapshotted; if it later scribbles
    # on freed memory the child may die instead. Either way it is rejected.
    "background_thread": {Outcome.INCORRECT, Outcome.CRASHED},
}
REASON_HINT = {
    "input_mutated": "modified input",
    "nan_output": "NaN",
    "output_untouched": "NaN",
    "row0_only": "NaN",
    "pointer_cache": "input set 1",
    "segfault": "SIGSEGV",
    "exit_call": "exit",
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
    """A pointer-keyed cache that passes a single-set timing run still fails profiling's verification."""
    task = get_task("rmsnorm")
    result = strict_backend.profile(task, (CHEATS / "pointer_cache.c").read_text(), cpu_target)
    assert result.outcome == Outcome.INCORRECT, result.reason


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


def test_implausible_speed_is_flagged() -> None:
    task = get_task("matmul")
    inputs = task.make_inputs(0, False)
    assert implausibility(task, inputs, 1e3, peak_gflops=100.0, peak_gbps=10.0)  # 226 TFLOP/s
    assert not implausibility(task, inputs, 1e7, peak_gflops=100.0, peak_gbps=10.0)
    assert "parent" in implausibility(
        task, inputs, 1e7, peak_gflops=None, peak_gbps=None, parent_median_ns=2e8
    )
    assert np.isfinite(task.flops(inputs))
