"""One timing policy for every backend: how long to time, when a time cannot be real, when it must be
re-verified.

The C backend (c.py, its sandboxed child _child.py) and the Triton backend (triton/backend.py, its
worker on a GPU) both take a `TimingPlan`, send `plan.request()` to the process that times, stop
adding trials by the same rule (`_child.enough_trials`: the C child imports nothing from the project,
so the rule lives there and the Triton worker imports it), and judge the median with `judge_timing`.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass

from kernelgraph.agent.backends.native import timed_call_library
from kernelgraph.agent.evaluator import impossibility, suspicion
from kernelgraph.agent.results import CheckResult, Outcome
from kernelgraph.agent.tasks.base import Arrays, Task

log = logging.getLogger(__name__)


# The timing protocols (agent/backends/isolated.py): the evaluator times and checks every call of
# each kernel in its own child, or (the old protocol, kept for red-team controls and the cost bench)
# one child times both kernels in-process and keeps `verified_calls` sampled calls' outputs.
ISOLATED, IN_PROCESS = "isolated", "in-process"
PROTOCOLS = (ISOLATED, IN_PROCESS)


@dataclass(frozen=True)
class TimingPlan:
    warmup: int = 3
    min_trials: int = 20
    max_trials: int = 200
    budget_s: float = 3.0  # stop adding trials past this, once min_trials are done
    target_rel_iqr: float = 0.02  # ... or as soon as the spread is this tight
    verified_calls: int = 3  # in-process protocol only: timed calls whose outputs are checked (C)
    protocol: str = ISOLATED  # C backend: ISOLATED checks every call; IN_PROCESS is the old protocol
    # Every timed call starts from the declared cold state (evaluator 17: its inputs and outputs in no
    # cache, `_child.cache_flusher`). Off only in-process, for study v3's landscapes (LANDSCAPE_TIMING),
    # which were timed warm and stay comparable with the points measured so.
    cold: bool = True

    def __post_init__(self) -> None:
        if self.protocol not in PROTOCOLS:
            raise ValueError(f"protocol {self.protocol!r} is not one of {', '.join(PROTOCOLS)}")
        if not self.cold and self.protocol != IN_PROCESS:
            raise ValueError(f"cold: the {self.protocol} protocol times every call from the cold state")

    def cold_state_library(self) -> str | None:
        """The shared object the timing process flushes each call's arrays with, None to leave them warm."""
        return str(timed_call_library()) if self.cold else None

    def request(self) -> dict[str, float]:
        """What the timing process needs of the plan (the keys `_child.enough_trials` reads)."""
        return {
            "warmup": self.warmup,
            "min_trials": self.min_trials,
            "max_trials": self.max_trials,
            "budget_s": self.budget_s,
            "target_rel_iqr": self.target_rel_iqr,
        }


# Enough for keep decisions and the studies: the 20-trial floor, capped at about a second per pair.
FAST_TIMING = TimingPlan(warmup=2, min_trials=20, max_trials=60, budget_s=1.0)


@dataclass(frozen=True)
class TimingJudgement:
    """What a median time is worth: `outcome` None when it stands (`reverified` when it had to be)."""

    outcome: Outcome | None
    reason: str = ""
    reverified: bool = False


def judge_timing(
    task: Task,
    inputs: Arrays,
    median_ns: float,
    parent_median_ns: float | None,
    *,
    peak_gflops: float | None,
    peak_gbps: float | None,
    reverify: Callable[[], CheckResult],
) -> TimingJudgement:
    """A time beyond the target's peak is IMPLAUSIBLE and never rescued (a correct output does not
    make an impossible time real); a possible but suspicious one (far faster than its parent) stands
    only if `reverify()`, a check on fresh seeds, passes again."""
    impossible = impossibility(task, inputs, median_ns, peak_gflops=peak_gflops, peak_gbps=peak_gbps)
    if impossible:
        return TimingJudgement(
            Outcome.IMPLAUSIBLE,
            f"implausible timing: {impossible}; the kernel must not keep state between calls or "
            "work outside the timed call",
        )
    reason = suspicion(median_ns, parent_median_ns)
    if not reason:
        return TimingJudgement(None)
    log.info("%s: suspicious timing (%s); re-verifying", task.name, reason)
    again = reverify()
    if not again.correct:
        return TimingJudgement(
            again.outcome, f"suspicious timing ({reason}) and re-verification failed: {again.reason}"
        )
    return TimingJudgement(None, reason, reverified=True)
