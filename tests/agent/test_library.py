"""The library baseline: every task declares the call a user would make; it is timed in its own
sandboxed process on the kernels' inputs, must pass the task's own check, and every kernel time is
quoted beside it and the roofline."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from pydantic import ValidationError

from kernelgraph.agent import library
from kernelgraph.agent.backends.bubblewrap import Sandbox
from kernelgraph.agent.backends.timing import FAST_TIMING
from kernelgraph.agent.evaluator import RunStatus
from kernelgraph.agent.library import LibraryTiming, fast_p, library_choice, time_library, yardsticks
from kernelgraph.agent.results import Outcome
from kernelgraph.agent.target import Target
from kernelgraph.agent.tasks import definitions, get_task
from kernelgraph.core.models import Measurement
from kernelgraph.core.signature import CounterSource


def test_every_task_declares_a_library_call_that_its_reference_agrees_with() -> None:
    """The numpy call, run here on the small inputs, passes the task's tolerance (the torch call is
    checked in the sandbox by time_library; prefix_scan's float32 np.cumsum does not pass: see
    docs/yardsticks.md)."""
    for task in definitions():
        assert task.library is not None and task.library.numpy_call and task.library.torch_call, task.name
        inputs = task.make_inputs(101, True)
        got = task.library.numpy(inputs)
        for name, want in task.reference(inputs).items():
            out = np.asarray(got[name]).astype(want.dtype).reshape(want.shape)
            assert np.allclose(out, want, rtol=1e-3, atol=1e-3), task.name


@pytest.fixture(scope="module")
def cpu() -> Target:
    return Target(name="cpu-test", kind="cpu", arch="x86-64-v2", peak_gflops=100.0, peak_gbps=10.0, cores=2,
                  bandwidth_gbps={"L1": 400.0, "memory": 10.0}, cache_bytes={"L1": 1 << 15})  # fmt: skip


def test_the_library_is_timed_in_its_own_sandbox_and_checked(cpu: Target) -> None:
    task = get_task("matmul")
    timing = time_library(task, "48", 2, cpu, plan=FAST_TIMING)
    assert timing.outcome == Outcome.KEPT, timing.reason
    assert timing.library == library_choice(task) and timing.library in timing.label
    assert timing.median_ns and timing.median_ns > 0 and timing.trials >= FAST_TIMING.min_trials
    assert timing.instance == "48" and "2 threads" in timing.label
    assert timing.versions["numpy"] == np.__version__  # reported by the sandboxed process
    assert time_library(task, "48", 2, cpu, plan=FAST_TIMING) is timing  # once per process


def test_a_library_result_that_fails_the_tasks_check_gets_no_time(
    cpu: Target, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The parent checks what the library's process returns with the task's own check."""
    real_run = library._run

    def off_by_a_bit(request: dict[str, Any], threads: int, sandbox: Sandbox) -> Any:
        status, result, message = real_run(request, threads, sandbox)
        assert status is RunStatus.OK, message
        result["outputs"][-1][0] = result["outputs"][-1][0] * np.float32(1.01)  # the last full-size set
        return status, result, message

    monkeypatch.setattr(library, "_run", off_by_a_bit)
    timing = time_library(get_task("matmul"), "112", 1, cpu, plan=FAST_TIMING)
    assert timing.outcome == Outcome.INCORRECT and timing.median_ns is None
    assert "fails the task's correctness check" in timing.reason
    assert yardsticks(get_task("matmul").at("112"), 1e5, cpu, library=timing).speedup_vs_library is None


def test_yardsticks_quote_the_library_the_naive_baseline_and_the_roofline(cpu: Target) -> None:
    task = get_task("matmul").at("48")
    lib = LibraryTiming("matmul", "48", "numpy", "a @ b", 2, Outcome.KEPT, median_ns=2e4)
    flops, moved = 2.0 * 48**3, 3.0 * 4 * 48 * 48
    beside = yardsticks(task, 1e4, cpu, naive_median_ns=1e5, library=lib)
    assert beside.speedup_vs_library == pytest.approx(2.0) and beside.speedup_vs_naive == pytest.approx(10.0)
    assert beside.achieved_gflops == pytest.approx(flops / 1e4)
    assert beside.roofline_fraction == pytest.approx(max(flops / 100.0, moved / 400.0) / 1e4)
    assert beside.line().startswith("2.00x numpy")
    measured = Measurement(correct=True, counter_source=CounterSource.CPU_TIMING,
                           **{k: v for k, v in beside.to_json().items() if k in Measurement.model_fields})  # fmt: skip
    assert measured.speedup_vs_library == pytest.approx(2.0)


def test_a_measurements_library_speedup_comes_from_its_times() -> None:
    base: dict[str, Any] = {"median_ns": 1e4, "correct": True, "counter_source": "cpu_timing"}
    measured = Measurement(
        **base, library="numpy 2.4.6, 2 threads", library_median_ns=2e4, naive_median_ns=9e4
    )
    assert (measured.speedup_vs_library, measured.speedup_vs_naive) == (2.0, 9.0)
    assert Measurement(**base).speedup_vs_library is None
    with pytest.raises(ValidationError, match="roofline_fraction"):
        Measurement(**base, roofline_fraction=-0.5)


def test_fast_p_counts_every_task_and_only_correct_faster_ones() -> None:
    assert fast_p([2.0, 0.5, None, 1.2], 1.0) == 0.5
    assert fast_p([2.0, 0.5, None, 1.2], 0.0) == 0.75
    assert fast_p([], 1.0) == 0.0


def test_optimize_and_the_demo_lead_with_the_library(cpu: Target) -> None:
    from rich.console import Console

    from kernelgraph.agent.loop import OptimizeResult
    from kernelgraph.bench.demo import _library_table
    from kernelgraph.cli.agent import result_table

    lib = LibraryTiming("matmul", "", "torch", "torch.mm(a, b)", 2, Outcome.KEPT, median_ns=1.5e5,
                        versions={"torch": "2.5.1"})  # fmt: skip
    task = get_task("matmul")
    run = OptimizeResult(task="matmul", target="cpu-test", proposer="memoryless", run_id="r", budget=1,
                         baseline_ns=2e7, best_ns=1e6, best_source="", best_config=None, library=lib,
                         best_yardsticks=yardsticks(task, 1e6, cpu, naive_median_ns=2e7, library=lib))  # fmt: skip
    table = result_table([run], "t")
    rows = [table.columns[0]._cells, table.columns[1]._cells]
    assert rows[0][:2] == ["library", "best vs library"] and "torch 2.5.1, 2 threads" in rows[1][0]
    assert "0.15x" in rows[1][1]  # 1.5e5 / 1e6, before the speedup over naive
    console = Console(record=True, width=200)
    console.print(_library_table({"experience": [run], "memoryless": [run]}, 1, 0))
    text = console.export_text()
    assert "speedup over the library (torch 2.5.1, 2 threads: torch.mm(a, b))" in text and "0.15x" in text
