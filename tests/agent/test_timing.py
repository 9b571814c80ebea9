"""The one timing policy both backends use (agent/backends/timing.py): stopping rule, peak, re-verification."""

from __future__ import annotations

from kernelgraph.agent.backends._child import enough_trials
from kernelgraph.agent.backends.timing import TimingJudgement, TimingPlan, judge_timing
from kernelgraph.agent.results import CheckResult, Outcome
from kernelgraph.agent.tasks import get_task


def test_stopping_rule_honours_the_plan() -> None:
    plan = TimingPlan(min_trials=5, max_trials=8, budget_s=10.0, target_rel_iqr=0.0).request()
    assert not enough_trials([1.0] * 4, 0.0, plan)  # below the floor, whatever the spread
    assert not enough_trials([1.0, 2.0, 3.0, 4.0, 9.0], 0.0, plan)
    assert enough_trials([1.0, 2.0, 3.0, 4.0, 9.0], 11.0, plan)  # past the budget
    assert enough_trials([float(i) for i in range(1, 9)], 0.0, plan)  # at max_trials
    tight = TimingPlan(min_trials=5, target_rel_iqr=0.02).request()
    assert enough_trials([100.0] * 5, 0.0, tight)


def _judge(
    median_ns: float, parent_ns: float | None, reverified: CheckResult
) -> tuple[TimingJudgement, list[int]]:
    task = get_task("softmax", "triton")
    inputs = task.make_inputs(0, True)
    calls: list[int] = []

    def reverify() -> CheckResult:
        calls.append(1)
        return reverified

    judged = judge_timing(
        task, inputs, median_ns, parent_ns, peak_gflops=1000.0, peak_gbps=1000.0, reverify=reverify
    )
    return judged, calls


def test_a_time_beyond_the_peak_is_implausible_and_never_reverified() -> None:
    judged, calls = _judge(1e-3, None, CheckResult(Outcome.KEPT, "ok"))
    assert judged.outcome is Outcome.IMPLAUSIBLE and "exceeds" in judged.reason
    assert calls == []


def test_a_suspicious_speedup_stands_only_after_reverification() -> None:
    judged, calls = _judge(1e6, 1e8, CheckResult(Outcome.KEPT, "ok"))
    assert judged.outcome is None and judged.reverified and calls == [1]
    judged, _ = _judge(1e6, 1e8, CheckResult(Outcome.INCORRECT, "wrong on seed 404"))
    assert judged.outcome is Outcome.INCORRECT and "re-verification failed" in judged.reason
    judged, calls = _judge(1e6, 2e6, CheckResult(Outcome.INCORRECT, "unused"))
    assert judged.outcome is None and not judged.reverified and calls == []
