"""The optimization loop: propose, compile, check, profile, keep or discard, and record every attempt.

`optimize` registers the target (with its measured peaks), measures the baseline, then spends its
budget of attempts. Each attempt is judged by the backend (compile, the honest evaluator's check,
a profile interleaved with the current best) and kept only when correct and, by a confidence
interval over its interleaved pairs of calls, faster by more than `keep_threshold` (`keep_decision`). Every attempt, failures included with their diagnosis, is recorded through the
experience client as an `AttemptRecord` whose parent is the current best kernel and its measurement:
sent in full the first time, then referenced by the measurement id the service gave back (a kept
child becomes the next parent already recorded), so a run sends each parent's source once.
"""

from __future__ import annotations

import functools
import hashlib
import logging
import math
import statistics
import uuid
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from kernelgraph.agent.backends.base import Backend
from kernelgraph.agent.backends.bubblewrap import UNSAFE_LABEL
from kernelgraph.agent.library import LibraryTiming, Yardsticks, library_for, yardsticks
from kernelgraph.agent.proposers.base import (
    HistoryEntry,
    Proposal,
    ProposalContext,
    Proposer,
    config_key,
    describe_config,
)
from kernelgraph.agent.results import Evaluation, Outcome, ProfileResult
from kernelgraph.agent.targets import Target
from kernelgraph.agent.tasks.base import Config, Task
from kernelgraph.client import ExperienceClient
from kernelgraph.core.errors import KernelGraphError
from kernelgraph.core.models import (
    AppliedTransform,
    AttemptRecord,
    HardwareTarget,
    KernelVariant,
    Measurement,
    TargetKind,
)

log = logging.getLogger(__name__)

STATIC_ONLY = "compiled and correct; static metrics recorded, not timed (no GPU here to time it)"
DEFAULT_KEEP_THRESHOLD = 0.02  # keep only >2% faster, so timing noise is not kept
MAX_IDLE_STEPS = 3  # stop after this many steps in a row with nothing to propose
# A comparison's parent is an earlier candidate, code a model wrote: its time is what its code chooses
# (one that spins in the runs a coin chooses made a copy of itself read 1.3x faster: the stop-44
# adversary). So the loop marks the fastest median a kept kernel's code has been timed at in the run,
# and a gain against it as a parent that ran more than this share slower than its mark is not judged.
# A bound, with its limits in docs/sandbox.md ("What this does not guarantee"): above the 7.6% a
# parent's median moved within a few comparisons here, below the 20-33% the adversary's spin gave
# (at 20% some of its fakes went through; results/parent-mark-stop45/: spread.py, rejudge.log).
PARENT_SLOWDOWN_MAX = 0.15
# The mark bounds a slow parent per comparison, not across them, and two kernels of a comparison can
# signal each other (the map counts of pages both map, the gaps between calls): a family of identical
# kernels, each slow only as the parent of the next, was kept at 1.07-1.12x per generation under the
# mark while 5-7% slower than honest code (the ninth adversary, results/redteam-stop47). So a gain
# against a model-written parent is kept only once confirmed against the task's baseline, trusted code
# that signals nothing, in a comparison of its own: the candidate's speedup over the baseline must be
# above the parent's, measured so when the parent was kept, by the keep rule's bar and confidence
# (`keep_decision`, its re-measurements included: without the bar, a copy of the parent passed
# whenever the parent's figure had come out low by more than the interval's half-width, about 0.5%).
# What a parent chose to spend as a parent then buys nothing.
# A figure over the baseline is itself a time model-written code chose: a family that ran its
# confirmations slower against the baseline (told by the map counts, or by the baseline's long calls in
# the gaps between its own) by less in each generation cleared the bar with identical code, kept at
# 1.12-1.16x per generation (the tenth adversary, results/redteam-stop48). So a kernel's figure is the
# fastest it showed: the baseline's median in its confirmation over the least of its medians there and
# in the comparison it won (and a parent's, at least the baseline's over the parent's median in this
# pair). And the gain over the parent must agree with the candidate's speed against the baseline (the
# fastest of its confirmation and, where that one does not agree, a second) over the parent's figure:
# a pair ratio above that by more than PAIR_BEYOND_BASELINE_MAX says the parent ran slower against
# this candidate than against the baseline, or the candidate slower against the baseline than against
# its parent (the same family, slow everywhere by less in each generation, and slower still as a
# parent under its mark): not judged. Left: each step of such a family is a real gain of at least
# the keep bar against trusted code, its stored ratio above it by at most this share.
PAIR_BEYOND_BASELINE_MAX = 0.05
ANCHORED_FIGURES = True  # the three rules above; off only in the red-team controls
# Each rule above compares figures from different comparisons, and the host's speed drifts between
# them: the parent mark refused honest gains when the host slowed down (9 of 80 steps at stop 50, the
# parents 32-172% over marks set minutes before), and drift let a parent 8-12% slower than its figure,
# under the mark, have identical copies stored at up to 1.11-1.18x (the thirteenth adversary,
# results/redteam-stop50). On, the baseline is timed as a third kernel of the comparison itself where
# the backend can (`_decide_beside_baseline`): the candidate makes one call a round, its ratio to the
# parent's call and to the baseline's taken from the same call, and the parent's speed over the
# baseline is read in the same rounds, where the host's speed cancels: 0 of 80 honest steps not
# judged against 3 (results/stop51/unjudged_both.log). Off by default: no comparison of a
# model-written kernel is then made without trusted code beside it, so a family that runs slow only
# where trusted code is timed (the tenth adversary's ladder, held to one step by the figures above)
# runs slow everywhere, and two of its three identical generations were kept at 1.09x each
# (results/stop51/ladder_three.log; docs/sandbox.md, "The baseline in the comparison").
BASELINE_IN_THE_COMPARISON = False
# A comparison the host left unjudged (its cores not free, the hypervisor's steal: `Evaluation.host_busy`)
# is evaluated once more before the step ends not judged. Not one left unjudged by a rule on times the
# kernels chose (a parent over its mark, a pair the figures contradict): a second draw there is one
# more chance for a family whose parent runs slower against its child, and the twelfth adversary had
# such a step (parent 7% slower) refused on the first draw and kept on the second
# (results/redteam-stop49/REPORT.md). Nor a candidate's own failure against the baseline, which is
# its failure (`_confirm`).
UNJUDGED_RETRIES = 1


class OptimizeError(Exception):
    """The run cannot start (e.g. the baseline itself does not compile, check or run)."""


@dataclass(frozen=True)
class StepReport:
    """One attempt of a run, as recorded."""

    step: int
    transform: str
    params: dict[str, Any]
    outcome: Outcome
    speedup: float | None  # over the parent (the best at that time), interleaved
    median_ns: float | None
    best_ns: float
    speedup_so_far: float  # baseline / best after this step
    diagnosis: str
    rationale: str
    attempt_key: str  # the key it was recorded (or tried to be recorded) under
    recorded: bool
    retrieval: Mapping[str, Any] | None = None  # what the proposer retrieved (Proposal.retrieval)
    judged: bool = True  # False: not compared fairly (`Evaluation.judged`), so not recorded either


@dataclass
class OptimizeResult:
    task: str
    target: str
    proposer: str
    run_id: str
    budget: int
    baseline_ns: float
    best_ns: float
    best_source: str
    best_config: Config | None
    steps: list[StepReport] = field(default_factory=list)
    unrecorded: int = 0  # attempts the service did not take
    # attempts not compared fairly (a busy host, or a parent slower than its mark): not recorded
    not_judged: int = 0
    chained_speedup: float = 1.0  # product of the kept steps' interleaved speedups
    final_interleaved: bool = False  # baseline_ns and best_ns come from one interleaved profile
    library: LibraryTiming | None = None  # the task's library call, timed at the run's start
    best_yardsticks: Yardsticks | None = None  # the best beside the library and the roofline, at the end

    @property
    def speedup(self) -> float:
        return self.baseline_ns / self.best_ns

    @property
    def static_only(self) -> bool:
        """Nothing could be timed (a GPU target on a machine without one): attempts were compiled,
        checked in the interpreter and recorded with static metrics, and none was kept."""
        return not math.isfinite(self.baseline_ns)

    @property
    def attempts(self) -> int:
        return len(self.steps)

    @property
    def outcomes(self) -> dict[str, int]:
        counts = Counter(s.outcome.value for s in self.steps)
        return {o.value: counts.get(o.value, 0) for o in Outcome}

    @property
    def curve(self) -> list[float]:
        """Speedup over the baseline after each attempt (for budget curves): the product of the kept
        steps' interleaved speedups, so it never moves with drift between separate measurements."""
        return [s.speedup_so_far for s in self.steps]

    def to_json(self) -> dict[str, Any]:
        return {
            "task": self.task,
            "target": self.target,
            "proposer": self.proposer,
            "run_id": self.run_id,
            "budget": self.budget,
            "static_only": self.static_only,
            "baseline_ns": _finite_or_none(self.baseline_ns),
            "best_ns": _finite_or_none(self.best_ns),
            "speedup": _finite_or_none(self.speedup),
            "attempts": self.attempts,
            "outcomes": self.outcomes,
            "curve": self.curve,
            "final_interleaved": self.final_interleaved,
            # The live "so far" figure: the product of the kept steps' interleaved speedups; `speedup`
            # is the final re-timing (best and baseline interleaved) when final_interleaved.
            "chained_speedup": _finite_or_none(self.chained_speedup),
            "best_config": dict(self.best_config) if self.best_config is not None else None,
            "library": self.library.to_json() if self.library is not None else None,
            "yardsticks": self.best_yardsticks.to_json() if self.best_yardsticks is not None else None,
            "unrecorded": self.unrecorded,
            "not_judged": self.not_judged,
            "steps": [_step_json(s) for s in self.steps],
        }


def _finite_or_none(value: float) -> float | None:
    return value if math.isfinite(value) else None


def _step_json(s: StepReport) -> dict[str, Any]:
    return {
        "step": s.step,
        "transform": s.transform,
        "params": s.params,
        "outcome": s.outcome.value,
        "judged": s.judged,
        "speedup": s.speedup,
        "median_ns": s.median_ns,
        "speedup_so_far": s.speedup_so_far,
        "diagnosis": s.diagnosis[:500],
        "retrieval": dict(s.retrieval) if s.retrieval is not None else None,
    }


def hardware_target(target: Target) -> HardwareTarget:
    """The service's model of an agent target, with its measured peaks."""
    limits = dict(target.limits)
    return HardwareTarget(
        name=target.name,
        kind=TargetKind(target.kind),
        arch=target.arch,
        peak_gflops=target.peak_gflops,
        peak_gbps=target.peak_gbps,
        cores=target.cores,
        isa=target.isa,
        host=target.host[:256] or None,
        sm_count=limits.get("sm_count"),
        smem_per_block_bytes=limits.get("smem_per_block_bytes"),
        registers_per_sm=limits.get("registers_per_sm"),
    )


def measurement(
    profile: ProfileResult, parent_median_ns: float | None = None, beside: Yardsticks | None = None
) -> Measurement:
    """The service's Measurement of a successful profile, raw counters included; `parent_median_ns`:
    the parent's time the speedup was computed against (the same run's, when timed interleaved);
    its yardsticks `beside` it where they were measured."""
    timed = not profile.static
    marks = beside if beside is not None and timed else None
    return Measurement(
        parent_median_ns=parent_median_ns if timed else None,
        median_ns=profile.median_ns if timed else None,
        iqr_ns=profile.iqr_ns if timed and math.isfinite(profile.iqr_ns) and profile.iqr_ns >= 0 else None,
        trials=profile.trials,
        correct=True,
        static=profile.static,
        counter_source=profile.counter_source,
        counters=profile.recordable_counters,
        tool_versions={k: v[:128] for k, v in profile.tool_versions.items()},
        evaluator_version=profile.evaluator_version,
        sandboxed=(profile.sandbox != UNSAFE_LABEL) if profile.sandbox else None,
        library=marks.library if marks else None,
        library_median_ns=marks.library_median_ns if marks else None,
        naive_median_ns=marks.naive_median_ns if marks else None,
        achieved_gflops=marks.achieved_gflops if marks else None,
        achieved_gbps=marks.achieved_gbps if marks else None,
        roofline_fraction=marks.roofline_fraction if marks else None,
    )


def library_baseline(task: Task, backend: Backend, target: Target) -> LibraryTiming | None:
    """The task's library call timed at the target's thread count, with the backend's timing plan;
    None where there is none to time (a GPU target, a task without a library call)."""
    return library_for(task, target, plan=getattr(backend, "timing", None))


def beside_yardsticks(
    task: Task, target: Target, result: OptimizeResult, profile: ProfileResult | None
) -> Yardsticks | None:
    """A timed profile of this run beside its naive baseline, its library and the roofline."""
    if profile is None or profile.static or not math.isfinite(profile.median_ns) or profile.median_ns <= 0:
        return None
    naive = result.baseline_ns if math.isfinite(result.baseline_ns) else None
    return yardsticks(task, profile.median_ns, target, naive_median_ns=naive, library=result.library)


def _variant(task: Task, backend: str, source: str, label: str) -> KernelVariant:
    return KernelVariant(task=task.name, backend=backend, source=source, patterns=list(task.patterns)[:8],
                         family=task.family, variant=label[:512])  # fmt: skip


@dataclass
class _Best:
    config: Config | None
    source: str
    profile: ProfileResult
    label: str
    # The id the service gave this kernel's measurement once recorded; later attempts from this
    # parent reference it instead of sending the source and measurement again.
    measurement_id: str | None = None
    # Its mark: the fastest median its code has been timed at in this run, as the candidate it was kept
    # as and as the parent of each judged comparison since (`PARENT_SLOWDOWN_MAX`); None for the task's
    # baseline, which is trusted code.
    mark_ns: float | None = None
    # Its speedup over the baseline when it was kept (1 for the baseline): its pair ratio against the
    # baseline, or the figure its confirmation gave it (`_confirm`).
    over_baseline: float = 1.0


def _judge(
    task: Task, backend: Backend, target: Target, source: str, parent_source: str, reference_source: str | None = None
) -> Evaluation:  # fmt: skip
    """The verdict on one candidate source before the keep decision (KEPT: correct and timed)."""
    built = backend.compile(task, source, target)
    if not built.ok:
        failed = Outcome.REJECTED if built.rejected else Outcome.COMPILE_ERROR
        return Evaluation(failed, built.diagnosis or "compile failed")
    checked = backend.check(task, source, target)
    if not checked.correct:
        return Evaluation(checked.outcome, checked.reason)
    profile = backend.profile(
        task, source, target, parent_source=parent_source, reference_source=reference_source
    )
    if profile.outcome == Outcome.KEPT and profile.static:
        return Evaluation(Outcome.DISCARDED, STATIC_ONLY, profile)
    if profile.outcome != Outcome.KEPT or not math.isfinite(profile.median_ns) or profile.median_ns <= 0:
        outcome = profile.outcome if profile.outcome != Outcome.KEPT else Outcome.CRASHED
        return Evaluation(outcome, profile.reason or "profile failed", judged=profile.judged,
                          host_busy=not profile.judged)  # fmt: skip
    return Evaluation(Outcome.KEPT, "", profile)


# Keep decisions (issue #29): a candidate is kept only when the confidence interval of its speedup
# over the incumbent, from the interleaved pairs of calls, lies above the keep threshold.
KEEP_CONFIDENCE = 0.99  # two-sided: the lower bound errs above the true median in 0.5% of decisions
MAX_MEASUREMENTS = 3  # a promising but unproven candidate is re-measured, pairs pooled, up to this


Interval = tuple[float, float, float]  # (low, median, high): `median_interval`


def median_interval(values: Sequence[float], confidence: float = KEEP_CONFIDENCE) -> Interval:
    """(low, median, high): a distribution-free confidence interval of the median, from order
    statistics (the number of values below the true median is Binomial(n, 1/2)); (nan, nan, nan)
    for no values, and the extremes when there are too few values for the confidence asked."""
    ordered = sorted(values)
    n = len(ordered)
    if n == 0:
        return math.nan, math.nan, math.nan
    tail, k, mass = (1.0 - confidence) / 2, 0, 0.0
    while k < n // 2:  # the largest k with P(Binomial(n, 1/2) < k + 1) <= tail
        mass += math.comb(n, k) / 2.0**n
        if mass > tail:
            break
        k += 1
    mid = float(statistics.median(ordered))
    return float(ordered[max(k - 1, 0)]), mid, float(ordered[min(n - k, n - 1)])


@dataclass(frozen=True)
class KeepDecision:
    """Whether to keep a candidate, from the pooled pairs of all its measurements."""

    keep: bool
    speedup: float  # the median pair ratio
    low: float
    high: float
    measurements: int
    pairs: int
    refused: str = ""  # why a re-measurement was not judged: no decision
    refused_by_host: bool = False  # by the host (`ProfileResult.judged`), not by `refuse`

    def describe(self, keep_threshold: float) -> str:
        return (f"{self.speedup:.3f}x the current best ({KEEP_CONFIDENCE:.0%} interval {self.low:.3f}-"
                f"{self.high:.3f} over {self.pairs} interleaved pairs, {self.measurements} measurement(s); "
                f"kept only when the interval is above {1 + keep_threshold:.2f}x)")  # fmt: skip


def pool_measurements(
    first: ProfileResult,
    remeasure: Callable[[], ProfileResult | None],
    settled: Callable[[list[ProfileResult]], bool],
    usable: Callable[[ProfileResult], bool],
    refuse: Callable[[ProfileResult], str] = lambda _: "",
) -> tuple[list[ProfileResult], str, bool]:
    """The measurements a keep decision pools: `first`, then re-measurements while the pool is not
    `settled` (promising, unproven), up to MAX_MEASUREMENTS, stopping at one that failed (None, or not
    `usable`). Returns (the pool, why there is no decision, whether the host said so): a
    re-measurement the host did not judge, or one `refuse` gives a reason for, leaves no decision."""
    measured = [first]
    while not settled(measured) and len(measured) < MAX_MEASUREMENTS:
        again = remeasure()
        if again is not None and not again.judged:  # no verdict either way: the loop records nothing
            return measured, again.reason, True
        refused = refuse(again) if again is not None and usable(again) else ""
        if refused:  # it would be pooled into the decision: no decision instead
            return measured, refused, False
        if again is None or not usable(again):  # the re-measurement failed: not proven
            break
        measured.append(again)
    return measured, "", False


def keep_decision(
    first: ProfileResult,
    remeasure: Callable[[], ProfileResult | None],
    keep_threshold: float,
    refuse: Callable[[ProfileResult], str] = lambda _: "",
) -> KeepDecision:
    """Keep when the interval's low end is above 1 + threshold; discard at once when the median is
    not above it; in between (promising, unproven) re-measure and pool, up to MAX_MEASUREMENTS. A
    re-measurement not judged by the host, or one `refuse` gives a reason for, leaves no decision."""
    bar = 1.0 + keep_threshold

    def pairs(measured: list[ProfileResult]) -> list[float]:
        return [r for p in measured for r in p.paired_ratios]

    def settled(measured: list[ProfileResult]) -> bool:
        low, mid, _ = median_interval(pairs(measured))
        return low > bar or mid <= bar

    measured, refused, by_host = pool_measurements(
        first, remeasure, settled, lambda p: bool(p.paired_ratios), refuse
    )
    low, mid, high = median_interval(pairs(measured))
    return KeepDecision(
        not (refused or by_host) and low > bar,
        mid,
        low,
        high,
        len(measured),
        len(pairs(measured)),
        refused,
        by_host,
    )


def evaluate(
    task: Task,
    backend: Backend,
    target: Target,
    source: str,
    parent_source: str,
    *,
    parent_median_ns: float | None = None,
    parent_mark_ns: float | None = None,
    baseline_source: str | None = None,
    parent_over_baseline: float | None = None,
    keep_threshold: float = DEFAULT_KEEP_THRESHOLD,
) -> Evaluation:
    """The full evaluation the loop applies to a candidate: admission and compile, correctness on
    several input sets, timing interleaved with `parent_source` (distinct inputs per call, the timed
    outputs verified, impossible times IMPLAUSIBLE), counters, and the keep decision.

    `parent_median_ns` is used only when the profile did not time the parent interleaved.
    `parent_mark_ns`, the fastest the parent's code was timed at before (None for trusted code): a
    gain against a parent that ran slower than that by more than PARENT_SLOWDOWN_MAX is not judged,
    in the first measurement and in every re-measurement. With `baseline_source` and
    `parent_over_baseline` (a model-written parent's speedup over that trusted baseline), a gain is
    kept only once confirmed against the baseline, timed in the same comparison where the backend
    can and `BASELINE_IN_THE_COMPARISON` is on (`_decide_beside_baseline`: the parent's speed over
    the baseline in the same rounds then
    bounds a slow parent, and `parent_mark_ns`, a figure from another moment of the host, is not
    used), else in one of its own (`_confirm`); the verdict then carries the candidate's own
    `over_baseline`.
    """
    beside = baseline_source if parent_over_baseline is not None and BASELINE_IN_THE_COMPARISON else None
    verdict = _judge(task, backend, target, source, parent_source, beside)
    profile = verdict.profile
    if profile is None or profile.static:
        return verdict
    if beside is not None and parent_over_baseline is not None and profile.reference_ratios:  # fmt: skip
        return _decide_beside_baseline(verdict, task, backend, target, source, parent_source, beside,
                                       parent_over_baseline, keep_threshold)  # fmt: skip
    if profile.paired_ratios:
        remeasure = functools.partial(_remeasure, task, backend, target, source, parent_source)
        decision = keep_decision(profile, remeasure, keep_threshold,
                                 functools.partial(_parent_slowed, mark_ns=parent_mark_ns))  # fmt: skip
        # The recorded speedup is the stored measurement's own (parent median / median); the
        # decision rests on the interval of the pairs.
        ratio = profile.parent_median_ns / profile.median_ns if profile.parent_median_ns else decision.speedup
        if decision.refused:
            return Evaluation(Outcome.DISCARDED, f"promising, but re-measured {decision.refused}", profile,
                              judged=False, host_busy=decision.refused_by_host)  # fmt: skip
        if decision.keep and ratio > 1.0:
            slowed = _parent_slowed(profile, parent_mark_ns)
            if slowed:
                return Evaluation(Outcome.DISCARDED, slowed, profile, judged=False)
            return _confirm(replace(verdict, speedup=ratio), task, backend, target, source, baseline_source,
                            parent_over_baseline, keep_threshold)  # fmt: skip
        # Kept means faster in the evidence stored too (the service refuses a `kept` whose recorded pair
        # is not): pooled pairs that prove a gain the first measurement's medians do not show are not kept.
        why = decision.describe(keep_threshold) + (
            "" if not decision.keep else f"; its stored pair is {ratio:.3f}x"
        )
        return Evaluation(Outcome.DISCARDED, "correct but not proven faster: " + why, profile, ratio)
    parent_ns = profile.parent_median_ns or parent_median_ns
    speedup = parent_ns / profile.median_ns if parent_ns else None
    if speedup is not None and speedup > 1.0 + keep_threshold:
        slowed = _parent_slowed(profile, parent_mark_ns)  # a parent timed beside it (Triton), not paired
        if slowed:
            return Evaluation(Outcome.DISCARDED, slowed, profile, judged=False)
        return _confirm(replace(verdict, speedup=speedup), task, backend, target, source, baseline_source,
                        parent_over_baseline, keep_threshold)  # fmt: skip
    reason = (
        f"correct but not faster: {speedup:.3f}x the current best (threshold {1 + keep_threshold:.2f}x)"
        if speedup is not None
        else "correct, but the parent was not timed: nothing to compare"
    )
    return Evaluation(Outcome.DISCARDED, reason, profile, speedup)


def _confirm(
    kept: Evaluation, task: Task, backend: Backend, target: Target, source: str, baseline_source: str | None,
    parent_over_baseline: float | None, keep_threshold: float,
) -> Evaluation:  # fmt: skip
    """`kept` (a gain over its parent), confirmed against the trusted baseline where the parent is
    model-written (the comments above PARENT_SLOWDOWN_MAX and PAIR_BEYOND_BASELINE_MAX): kept with
    its `over_baseline` (the fastest it showed) when its speedup over the baseline is proven above the
    parent's figure (`parent_over_baseline`, or what the parent's time in the pair says where higher)
    times 1 + `keep_threshold` and its gain over the parent agrees with the two figures, else
    discarded (not judged where the confirming comparison was not, or the figures contradict the gain)."""
    if baseline_source is None or parent_over_baseline is None:
        return kept
    compare = functools.partial(_compared_with_baseline, kept, task, backend, target, source, baseline_source)
    confirmation = compare("")
    if isinstance(confirmation, Evaluation):
        return confirmation
    (profile, baseline_ns), won = confirmation, kept.profile
    if ANCHORED_FIGURES and won is not None and won.parent_median_ns:  # the parent as fast as it ran here
        parent_over_baseline = max(parent_over_baseline, baseline_ns / won.parent_median_ns)
    bar = parent_over_baseline * (1.0 + keep_threshold)  # the keep rule's bar, over the parent's figure
    if profile.paired_ratios:
        remeasure = functools.partial(_remeasure, task, backend, target, source, baseline_source)
        decision = keep_decision(profile, remeasure, bar - 1.0)
        if decision.refused:
            why = f"not judged: re-measured against the baseline {decision.refused}"
            return replace(kept, outcome=Outcome.DISCARDED, reason=why, judged=False,
                           host_busy=decision.refused_by_host)  # fmt: skip
        over, confirmed, shown = decision.speedup, decision.keep, f"{decision.low:.3f}-{decision.high:.3f}"
    else:  # the baseline timed beside it (Triton), not paired: the point estimate, above the keep bar
        over = profile.parent_median_ns / profile.median_ns if profile.parent_median_ns else 0.0
        confirmed, shown = over > bar, "no interval: not paired"
    if not confirmed:
        why = (f"correct and {kept.speedup or 0:.3f}x its parent, but not confirmed against the baseline: {over:.3f}x "
               f"the baseline ({KEEP_CONFIDENCE:.0%} interval {shown}), not above {1 + keep_threshold:.2f} times the parent's {parent_over_baseline:.3f}x "
               "(a model-written parent's time is what its code chooses, so a gain over it must show against trusted code)")  # fmt: skip
        return replace(kept, outcome=Outcome.DISCARDED, reason=why)
    if not ANCHORED_FIGURES or won is None:
        return replace(kept, over_baseline=over)

    # The gain must agree with the candidate's speed against the baseline, the fastest it showed
    # there: its speed in the pair it won is not evidence for the pair (stop 49 took it, and the
    # figures' ratio became the pair's own: the tenth adversary's last generation, 10% slower against
    # the baseline, was kept at the parent's 13%, in one of this stop's suites). The confirmation's
    # median alone read honest gains 5-30% low (results/stop49/unjudged-before.log), so a gain it
    # does not agree with is confirmed once more, and the faster reading counts.
    def agrees(speed: float) -> bool:  # the gain within the rule of what the speeds over the baseline show
        return (kept.speedup or 0.0) <= speed / parent_over_baseline * (1.0 + PAIR_BEYOND_BASELINE_MAX)

    speed = max(over, baseline_ns / profile.median_ns)
    if not agrees(speed):
        again = compare("second ")
        if isinstance(again, Evaluation):
            return again
        speed = max(speed, again[1] / again[0].median_ns)
    if not agrees(speed):
        trusted = speed / parent_over_baseline  # the gain as the two speeds over the baseline show it
        why = (f"not judged: {kept.speedup or 0:.3f}x its parent, but {trusted:.3f}x by the two kernels' speeds over the "
               f"baseline ({speed:.3f}x in two comparisons with it, against the parent's {parent_over_baseline:.3f}x): the parent ran "
               f"slower against this candidate than against the baseline by more than {PAIR_BEYOND_BASELINE_MAX:.0%}")  # fmt: skip
        return replace(kept, outcome=Outcome.DISCARDED, reason=why, judged=False)
    # Its figure, the next generation's bar: the fastest it showed anywhere, as the parent's is taken.
    return replace(kept, over_baseline=max(speed, baseline_ns / won.median_ns))


def _decide_beside_baseline(
    first: Evaluation, task: Task, backend: Backend, target: Target, source: str, parent_source: str,
    baseline_source: str, parent_over_baseline: float, keep_threshold: float,
) -> Evaluation:  # fmt: skip
    """The keep decision over a model-written parent where the baseline (trusted code) was timed as a
    third kernel of the comparison (`BASELINE_IN_THE_COMPARISON`). Kept when, over the pooled rounds
    of up to MAX_MEASUREMENTS measurements, the interval of the gain over the parent is above the keep
    bar and the interval of the speed over the baseline is above the parent's figure times it (the
    figure at least the parent's speed over the baseline in these rounds: the fastest it showed); not
    judged where the parent's speed over the baseline in these rounds is shown, at the same
    confidence, below its figure by more than PAIR_BEYOND_BASELINE_MAX (it ran slower as this
    candidate's parent than its figure says, and the gain over it would be stored that much high).
    Re-measured, pooled, while either is promising and unproven; the stored pair and speedup are the
    first measurement's."""
    bar = 1.0 + keep_threshold

    def intervals(measured: list[ProfileResult]) -> tuple[Interval, Interval, Interval, float, bool]:
        """The intervals of the gain, of the speed over the baseline and of the parent's speed over the
        baseline in these rounds (baseline / parent: the two ratios of a round), the parent's figure,
        and whether the first two prove the gain."""
        gains = [r for p in measured for r in p.paired_ratios]
        speeds = [r for p in measured for r in p.reference_ratios]
        gain, speed = median_interval(gains), median_interval(speeds)
        parent_here = median_interval([s / g for s, g in zip(speeds, gains, strict=True)])
        figure = max(parent_over_baseline, parent_here[1]) if ANCHORED_FIGURES else parent_over_baseline
        return gain, speed, parent_here, figure, gain[0] > bar and speed[0] > figure * bar

    def settled(measured: list[ProfileResult]) -> bool:
        gain, speed, _, figure, proven = intervals(measured)
        return proven or gain[1] <= bar or speed[1] <= figure * bar

    assert first.profile is not None
    remeasure = functools.partial(_remeasure, task, backend, target, source, parent_source, baseline_source)
    measured, refused, by_host = pool_measurements(
        first.profile, remeasure, settled, lambda p: bool(p.paired_ratios and p.reference_ratios)
    )
    if refused or by_host:  # only the host refuses here
        return replace(first, outcome=Outcome.DISCARDED, reason=f"promising, but re-measured {refused}",
                       judged=False, host_busy=True)  # fmt: skip
    gain, speed, parent_here, figure, proven = intervals(measured)
    profile = first.profile
    assert profile.parent_median_ns  # paired, so both medians were taken
    ratio = profile.parent_median_ns / profile.median_ns  # the stored pair's own
    rounds = sum(len(p.paired_ratios) for p in measured)
    shown = (f"{gain[1]:.3f}x the parent ({KEEP_CONFIDENCE:.0%} interval {gain[0]:.3f}-{gain[2]:.3f}) and "
             f"{speed[1]:.3f}x the baseline ({speed[0]:.3f}-{speed[2]:.3f}), over {rounds} rounds of the three "
             f"kernels in {len(measured)} measurement(s)")  # fmt: skip
    if not proven or ratio <= 1.0:
        rule = (f"{shown}; kept only when the first is above {bar:.2f}x and the second above {bar:.2f} times the "
                f"parent's {figure:.3f}x, and the stored pair ({ratio:.3f}x) is faster")  # fmt: skip
        if gain[0] > bar and ratio > 1.0:
            why = ("correct and faster than its parent, but not confirmed against the baseline (a model-written "
                   f"parent's time is what its code chooses, so a gain over it must show against trusted code): {rule}")  # fmt: skip
        else:
            why = f"correct but not proven faster: {rule}"
        return replace(first, outcome=Outcome.DISCARDED, reason=why, speedup=ratio)
    # Refused on evidence at the keep rule's confidence: the parent's speed here shown below its figure
    # by more than the rule's share (a point reading refused honest gains whose parent's figure, set
    # by the few rounds of the comparison it won, had come out high:
    # results/stop51/unjudged_both-point-rule.log).
    if ANCHORED_FIGURES and parent_here[2] * (1.0 + PAIR_BEYOND_BASELINE_MAX) < figure:
        why = (f"not judged: {shown}, so {speed[1] / figure:.3f}x by the two kernels' speeds over the baseline: "
               f"the parent ran {parent_here[1]:.3f}x the baseline here ({KEEP_CONFIDENCE:.0%} interval "
               f"{parent_here[0]:.3f}-{parent_here[2]:.3f}), below its figure {figure:.3f}x by more than "
               f"{PAIR_BEYOND_BASELINE_MAX:.0%}")  # fmt: skip
        return replace(first, outcome=Outcome.DISCARDED, reason=why, judged=False)
    return replace(first, speedup=ratio, over_baseline=speed[1])


def _compared_with_baseline(
    kept: Evaluation, task: Task, backend: Backend, target: Target, source: str, baseline_source: str, ordinal: str
) -> tuple[ProfileResult, float] | Evaluation:  # fmt: skip
    """The candidate timed against the baseline to confirm `kept`, with the baseline's median there;
    or the step's verdict where that comparison settles it: the candidate's own failure there is its
    failure, as in any comparison; one not judged leaves the step not judged."""
    profile = backend.profile(task, source, target, parent_source=baseline_source)
    where = f"its {ordinal}comparison with the baseline, which confirms a gain over a model-written parent"
    if profile.judged and profile.outcome != Outcome.KEPT:
        return Evaluation(profile.outcome, f"in {where}: {profile.reason}")
    if not profile.judged or not profile.parent_median_ns:
        return replace(kept, outcome=Outcome.DISCARDED, reason=f"not judged: {where}: {profile.reason}", judged=False,
                       host_busy=not profile.judged)  # fmt: skip
    return profile, profile.parent_median_ns


def _parent_slowed(profile: ProfileResult, mark_ns: float | None) -> str:
    """Why a gain against the parent timed in `profile` is not judged (`PARENT_SLOWDOWN_MAX`), or ""."""
    parent_ns = profile.parent_median_ns
    if mark_ns is None or not parent_ns or not math.isfinite(parent_ns):
        return ""
    if parent_ns <= mark_ns * (1.0 + PARENT_SLOWDOWN_MAX):
        return ""
    return (f"not judged: the parent ran {parent_ns / mark_ns - 1:.0%} slower (median {parent_ns / 1e3:.1f} us) "
            f"than its code was timed at before in this run ({mark_ns / 1e3:.1f} us); a parent's time is what its "
            f"code chooses, so a gain against it is judged only within {PARENT_SLOWDOWN_MAX:.0%} of its fastest")  # fmt: skip


def _remeasure(
    task: Task,
    backend: Backend,
    target: Target,
    source: str,
    parent_source: str,
    reference_source: str | None = None,
) -> ProfileResult | None:
    """The candidate measured again, beside `parent_source` (and `reference_source`, where given): the
    profile, where it timed or was not judged by the host; None where it failed."""
    again = backend.profile(
        task, source, target, parent_source=parent_source, reference_source=reference_source
    )
    return again if again.outcome == Outcome.KEPT or not again.judged else None


def optimize(
    task: Task,
    backend: Backend,
    target: Target,
    proposer: Proposer,
    client: ExperienceClient,
    budget: int,
    seed: int = 0,
    *,
    run_id: str | None = None,
    agent: str | None = None,
    keep_threshold: float = DEFAULT_KEEP_THRESHOLD,
    console: Console | None = None,
    final_check: bool = True,
    on_step: Callable[[StepReport], None] | None = None,
) -> OptimizeResult:
    """Optimize `task` on `target` with `budget` attempts; every attempt lands in the graph via `client`.

    With `final_check`, the best is finally timed interleaved with the baseline, and that pair gives
    `baseline_ns`, `best_ns` and `speedup`. `console` shows a progress bar and one line per attempt; None keeps the loop quiet. `seed` names
    the run (run ids are `<task>-<proposer>-s<seed>-<random>`); proposers carry their own seeds.
    `agent` is who the attempts are recorded as (default: the proposer's name).
    """
    run_id = run_id or f"{task.name}-{proposer.name}-s{seed}-{uuid.uuid4().hex[:8]}"
    client.upsert_targets([hardware_target(target)])
    baseline_source = task.source(backend.name, task.baseline_config)
    baseline = _Best(task.baseline_config, baseline_source, _baseline_profile(task, backend, target, baseline_source),
                     describe_config(task.baseline_config))  # fmt: skip
    best = baseline
    result = OptimizeResult(
        task=task.name, target=target.name, proposer=proposer.name, run_id=run_id, budget=budget,
        baseline_ns=baseline.profile.median_ns, best_ns=baseline.profile.median_ns,
        best_source=baseline_source, best_config=task.baseline_config,
    )  # fmt: skip
    if not baseline.profile.static:
        result.library = library_baseline(task, backend, target)
    history: list[HistoryEntry] = []
    tried: set[str] = {config_key(task.baseline_config)}
    diagnosis, idle = "", 0
    progress = _progress(console, f"{task.name} · {proposer.name}", budget)
    try:
        for step in range(budget):
            context = ProposalContext(
                task=task, backend=backend, target=target, config=best.config, source=best.source,
                profile=best.profile, history=tuple(history), diagnosis=diagnosis, step=step,
                run_id=run_id, tried=frozenset(tried),
            )  # fmt: skip
            proposal = proposer.propose(context)
            if proposal is None:
                idle += 1
                log.info("%s: nothing to propose at step %d", proposer.name, step)
                if idle >= MAX_IDLE_STEPS:
                    break
                continue
            idle = 0
            report, best, entry = _attempt(task, backend, target, client, proposal, best, result, step, run_id,
                                           agent or proposer.name, keep_threshold, baseline_source)  # fmt: skip
            if report.judged:  # a proposal not judged may be proposed again
                tried.add(_proposal_key(proposal))
            history.append(entry)
            diagnosis = report.diagnosis
            result.steps.append(report)
            if not report.judged:
                result.not_judged += 1
            elif not report.recorded:
                result.unrecorded += 1
            if progress is not None and console is not None:
                progress.advance(progress.task_ids[0])
                console.print(_step_line(report), highlight=False)
                if report.retrieval is not None:
                    console.print(_retrieval_line(report.retrieval), highlight=False, markup=False)
            if on_step is not None:
                on_step(report)
    finally:
        if progress is not None:
            progress.stop()
    if final_check and best is not baseline:
        _final_measurement(task, backend, target, result, baseline_source)
    if not result.static_only:
        result.best_yardsticks = yardsticks(task, result.best_ns, target, naive_median_ns=result.baseline_ns,
                                            library=result.library)  # fmt: skip
    return result


def _final_measurement(
    task: Task, backend: Backend, target: Target, result: OptimizeResult, baseline: str
) -> None:
    """Time the best against the baseline interleaved in one process: the reported speedup."""
    profile = backend.profile(task, result.best_source, target, parent_source=baseline)
    if profile.outcome == Outcome.KEPT and profile.parent_median_ns and math.isfinite(profile.median_ns):
        result.baseline_ns, result.best_ns, result.final_interleaved = (
            profile.parent_median_ns,
            profile.median_ns,
            True,
        )
    else:  # keep the separate measurements; the chain is in `curve`
        log.warning("%s: final interleaved measurement failed: %s", task.name, profile.reason)


def _baseline_profile(task: Task, backend: Backend, target: Target, source: str) -> ProfileResult:
    built = backend.compile(task, source, target)
    if not built.ok:
        raise OptimizeError(f"{task.name}: the baseline does not compile: {built.diagnosis}")
    checked = backend.check(task, source, target)
    if not checked.correct:
        raise OptimizeError(f"{task.name}: the baseline is not correct ({checked.outcome}): {checked.reason}")
    profile = backend.profile(task, source, target)
    if profile.outcome == Outcome.KEPT and profile.static:
        return profile  # compile-only target (no GPU): variants are explored and recorded, not timed
    if profile.outcome != Outcome.KEPT or not math.isfinite(profile.median_ns):
        reason = profile.reason or f"{profile.outcome.value}, no runtime measured"
        raise OptimizeError(f"{task.name}: the baseline could not be profiled: {reason}")
    return profile


def _proposal_key(proposal: Proposal) -> str:
    if proposal.source is not None:
        return "src:" + hashlib.sha256(proposal.source.encode()).hexdigest()
    return config_key(proposal.config or {})


def _attempt(
    task: Task, backend: Backend, target: Target, client: ExperienceClient, proposal: Proposal, best: _Best,
    result: OptimizeResult, step: int, run_id: str, agent: str, keep_threshold: float, baseline_source: str,
) -> tuple[StepReport, _Best, HistoryEntry]:  # fmt: skip
    try:
        source = proposal.render(task, backend.name)
    except Exception as exc:  # a task that cannot render a proposed config is a compile error of that config
        source, verdict = f"/* render failed: {exc} */", Evaluation(Outcome.COMPILE_ERROR, str(exc))
    else:
        model_written = best.mark_ns is not None  # the baseline has no mark: trusted code
        for tries_left in range(UNJUDGED_RETRIES, -1, -1):
            verdict = evaluate(task, backend, target, source, best.source, parent_median_ns=best.profile.median_ns,
                               parent_mark_ns=best.mark_ns, baseline_source=baseline_source if model_written else None,
                               parent_over_baseline=best.over_baseline if model_written else None,
                               keep_threshold=keep_threshold)  # fmt: skip
            if verdict.judged or not verdict.host_busy or not tries_left:
                break
            log.info("step %d not judged, evaluated again: %s", step, verdict.reason)
    outcome, diagnosis, profile, speedup = verdict.outcome, verdict.reason, verdict.profile, verdict.speedup
    parent_ns = profile.parent_median_ns if profile is not None and verdict.judged else None
    if best.mark_ns is not None and parent_ns and math.isfinite(parent_ns):
        best.mark_ns = min(best.mark_ns, parent_ns)
    new_best = best
    if outcome == Outcome.KEPT and profile is not None and speedup is not None:
        label = describe_config(proposal.config) if proposal.config is not None else f"llm step {step}"
        over = verdict.over_baseline if verdict.over_baseline is not None else best.over_baseline * speedup
        new_best = _Best(
            proposal.config, source, profile, label, mark_ns=profile.median_ns, over_baseline=over
        )
        # A gain over a model-written parent counts in the run's figure as far as the two kernels'
        # figures over the baseline show it: its pair ratio may be up to PAIR_BEYOND_BASELINE_MAX above
        # them (the eleventh adversary, results/redteam-stop48b), and so the figure telescopes to the
        # best's over the baseline.
        result.chained_speedup *= min(speedup, over / best.over_baseline)
        result.best_ns, result.best_source, result.best_config = (
            profile.median_ns,
            source,
            proposal.config,
        )
    child = _variant(task, backend.name, source,
                     describe_config(proposal.config) if proposal.config else f"step {step}")  # fmt: skip
    record = AttemptRecord(
        attempt_key=f"{run_id}:{step}",
        run_id=run_id,
        agent=agent,
        target=target.name,
        # The parent in full until the service has it; afterwards only its measurement's id.
        parent_measurement_id=best.measurement_id,
        parent=None if best.measurement_id else _variant(task, backend.name, best.source, best.label),
        parent_measurement=None
        if best.measurement_id
        else measurement(best.profile, beside=beside_yardsticks(task, target, result, best.profile)),
        transform=AppliedTransform(name=proposal.transform, params=_params(proposal.params)),
        child=child,
        # The service checks `speedup` against this pair (evaluate's: the interleaved parent when timed).
        child_measurement=measurement(
            profile,
            (profile.parent_median_ns or best.profile.median_ns)
            if speedup is not None
            else profile.parent_median_ns,
            beside_yardsticks(task, target, result, profile),
        )
        if profile is not None
        else None,
        outcome=outcome,
        speedup=speedup,
        diagnosis=diagnosis[:8000],
        rationale=proposal.rationale[:8000],
    )
    recorded = verdict.judged  # an attempt not compared fairly is no evidence either way: not stored
    try:
        stored = client.record_attempt(record) if recorded else None
    except KernelGraphError as exc:  # the run goes on; the result says how many did not land
        log.warning("attempt %s was not recorded: %s", record.attempt_key, exc)
        recorded = False
        if exc.field == "parent_measurement_id":  # the service no longer knows it: send it in full again
            best.measurement_id = None
    else:
        if stored is not None:
            best.measurement_id = stored.parent_measurement_id
            if new_best is not best:  # the kept child's measurement was just recorded: it is the next parent
                new_best.measurement_id = stored.child_measurement_id
    report = StepReport(
        step=step, transform=proposal.transform, params=dict(proposal.params), outcome=outcome, speedup=speedup,
        median_ns=profile.median_ns if profile is not None and not profile.static else None, best_ns=result.best_ns,
        speedup_so_far=result.chained_speedup, diagnosis=diagnosis, rationale=proposal.rationale,
        attempt_key=record.attempt_key, recorded=recorded, retrieval=proposal.retrieval, judged=verdict.judged,
    )  # fmt: skip
    entry = HistoryEntry(step=step, transform=proposal.transform, params=dict(proposal.params), outcome=outcome,
                         speedup=speedup, config=proposal.config, diagnosis=diagnosis, judged=verdict.judged)  # fmt: skip
    return report, new_best, entry


def _params(params: Any) -> dict[str, Any]:
    return {str(k): v for k, v in dict(params).items() if isinstance(v, int | float | bool | str)}


_STYLE = {
    Outcome.KEPT: "green", Outcome.DISCARDED: "yellow", Outcome.COMPILE_ERROR: "red",
    Outcome.INCORRECT: "red", Outcome.CRASHED: "red", Outcome.TIMEOUT: "red", Outcome.REJECTED: "red",
    Outcome.IMPLAUSIBLE: "magenta",
}  # fmt: skip


def _step_line(report: StepReport) -> str:
    params = ",".join(f"{k}={v}" for k, v in report.params.items())
    gain = f" {report.speedup:.2f}x" if report.speedup else ""
    style = _STYLE[report.outcome]
    return (
        f"  step {report.step:>2}  {report.transform}{f'({params})' if params else ''}"
        f"  [{style}]{report.outcome.value}[/{style}]{gain}  so far {report.speedup_so_far:.2f}x"
    )


def _retrieval_line(retrieval: Mapping[str, Any]) -> str:
    """What the experience proposer retrieved before the step, under its line."""
    found = ", ".join(
        f"{t['transform']} {t['score']:+.2f} ({t['attempts']})" for t in retrieval["transforms"]
    )
    why = f"; {retrieval['explanation']}" if retrieval.get("explanation") else ""
    return f"           retrieved {retrieval['neighbours']} similar states: {found or 'no transforms'}{why}"


def _progress(console: Console | None, label: str, budget: int) -> Progress | None:
    if console is None:
        return None
    progress = Progress(
        TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
        console=console, transient=True,
    )  # fmt: skip
    progress.add_task(label, total=budget)
    progress.start()
    return progress
