"""Typed results of every evaluation step: nothing escapes the loop as an exception."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from kernelgraph.core.models import Outcome, finite_counters  # the one definition, shared with the service
from kernelgraph.core.signature import CounterSource


@dataclass(frozen=True)
class Diagnostic:
    """One compiler message, located, so a proposer can act on it."""

    message: str
    line: int | None = None
    column: int | None = None
    severity: str = "error"

    def __str__(self) -> str:
        where = f"{self.line}:{self.column}: " if self.line is not None else ""
        return f"{where}{self.severity}: {self.message}"


@dataclass(frozen=True)
class CompileResult:
    ok: bool
    artifact: str | None = None  # path to the shared object / compiled kernel handle
    diagnostics: tuple[Diagnostic, ...] = ()
    log: str = ""
    static_metrics: dict[str, float] = field(default_factory=dict)  # Triton: registers, spills, smem...
    rejected: bool = False  # built, but refused by the admission checks (the diagnostics say why)

    @property
    def diagnosis(self) -> str:
        return "\n".join(str(d) for d in self.diagnostics) or self.log[-2000:]


@dataclass(frozen=True)
class CheckResult:
    outcome: Outcome  # KEPT here means "correct"; INCORRECT, CRASHED, TIMEOUT otherwise
    reason: str = ""
    max_abs_error: float | None = None
    # False: the kernels could not be compared fairly (other tasks wanted their cores: DISCARDED, "not
    # judged"), which is no evidence about the candidate either way
    judged: bool = True

    @property
    def correct(self) -> bool:
        return self.outcome == Outcome.KEPT


@dataclass(frozen=True)
class ProfileResult:
    """Timing and raw counters of one kernel on one target."""

    median_ns: float
    iqr_ns: float
    trials: int
    counters: dict[str, float]  # keyed by `CounterName` (raw tool events may add their own names)
    counter_source: CounterSource
    parent_median_ns: float | None = None  # the parent timed interleaved in the same process
    static: bool = False
    tool_versions: dict[str, str] = field(default_factory=dict)
    reverified: bool = False
    # KEPT when the kernel ran and re-verified; CRASHED, TIMEOUT, INCORRECT, COMPILE_ERROR otherwise
    # (then median_ns is NaN and `reason` says why).
    outcome: Outcome = Outcome.KEPT
    reason: str = ""
    evaluator_version: int | None = None  # agent.evaluator.EVALUATOR_VERSION of the code that measured
    sandbox: str = ""  # the sandbox it ran in ("bubblewrap 0.8.0"), or that it was off
    # parent time / candidate time of each interleaved trial (one pair of calls on the same inputs):
    # what the keep decision's confidence interval is taken over (agent/loop.py `keep_decision`)
    paired_ratios: tuple[float, ...] = ()
    judged: bool = True  # `CheckResult.judged`: False when the comparison could not be made fairly
    # Trusted code timed as a third kernel of the same comparison (`Backend.profile`'s
    # `reference_source`, where the backend can): its median, and reference time / candidate time of
    # each trial, the round of calls `paired_ratios` takes its pair from.
    reference_median_ns: float | None = None
    reference_ratios: tuple[float, ...] = ()

    @property
    def recordable_counters(self) -> dict[str, float]:
        """The counters a Measurement accepts (`core.models.finite_counters`: a NaN one is left out)."""
        return finite_counters(self.counters)


@dataclass(frozen=True)
class Evaluation:
    """The verdict on one candidate against its parent: what the loop records and decides on, and what
    `kernelgraph evaluate` prints. Compile, check and profile failures all end here as an outcome and
    its reason; `profile` holds the measurements when the candidate ran correctly."""

    outcome: Outcome
    reason: str
    profile: ProfileResult | None = None  # None unless it compiled, passed admission and ran correctly
    speedup: float | None = None  # parent time / candidate time, interleaved in one process
    judged: bool = True  # `CheckResult.judged`: the loop records no attempt that was not judged
    # Not judged for the host's reasons (cores not free, steal: `ProfileResult.judged`), not by a rule
    # on times the kernels chose (a parent over its mark, a pair the figures contradict): only such a
    # step is evaluated again (`agent/loop.py` UNJUDGED_RETRIES).
    host_busy: bool = False
    # A kept candidate's speedup over the task's baseline, where the loop measured it (`agent/loop.py`
    # `_confirm`: the fastest it showed): what its own children are confirmed against.
    over_baseline: float | None = None

    def to_json(self) -> dict[str, Any]:
        p = self.profile
        timed = p is not None and not p.static
        return {
            "outcome": self.outcome.value,
            "kept": self.outcome == Outcome.KEPT,
            "reason": self.reason,
            "judged": self.judged,
            "speedup": self.speedup,
            "median_ns": p.median_ns if p is not None and timed else None,
            "iqr_ns": p.iqr_ns if p is not None and timed else None,
            "parent_median_ns": p.parent_median_ns if p is not None else None,
            "trials": p.trials if p is not None else 0,
            "static": p.static if p is not None else False,
            "reverified": p.reverified if p is not None else False,
            "counter_source": p.counter_source.value if p is not None else None,
            "counters": p.recordable_counters if p is not None else {},
        }
