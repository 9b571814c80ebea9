"""What consolidation decides, as pure functions: measurement noise, contradictions and version weights.

No Neo4j in here (service/consolidation.py reads the graph, applies these rules and writes the result),
so every rule is unit-tested on plain values. docs/retrieval.md ("Consolidation") explains each.

- Noise: the log speedup of one attempt is uncertain by its two timings' spread (IQR / 1.349 per
  timing, relative to the median), never less than `NOISE_FLOOR`: run-to-run noise on a shared
  machine is larger than the spread inside one run.
- A contradiction: evidence for the same measured state, transform and parameter setting, taken by
  the same evaluator, that disagrees beyond that noise. Two kinds:
  `speedup`: one attempt helps beyond noise (log speedup - Z x noise > 0) and another hurts beyond
  noise (log speedup + Z x noise < 0);
  `outcome`: the same child kernel from the same state ran correctly in one attempt and failed
  (incorrect, crashed, timed out, implausible, did not build) in another, which a deterministic
  transform of the same source cannot do honestly (a race, a flaky check, a changed toolchain).
  Different children under the same transform name (an LLM writes new source every time) are not
  a contradiction when their outcomes differ: they are different kernels.
- Re-measurements: states of the same kernel, target, counter source and versions that measured the
  same signature dimensions and whose signatures lie within `MERGE_RADIUS_SQ` of each other (raw
  squared distance over those dimensions, renormalised to the whole signature) measured the same thing
  and are merged into one.
- Version weights: a measurement from a superseded evaluator (older than the newest one measuring
  in the namespace) counts `SUPERSEDED_EVALUATOR_WEIGHT`; one whose signature is older than
  `SIGNATURE_VERSION` and could not be re-signed counts `STALE_SIGNATURE_WEIGHT` (its position in
  signature space is not comparable); one whose cache counters came from a separate build of the
  source (schema 0014, evaluators before 3) counts `SEPARATE_BUILD_WEIGHT` more once the namespace
  holds measurements of evaluator 3, which counts the admitted object (its timing is the timed
  object's, its cache dimensions may describe other code); all multiply. Imported measurements
  (published timings) were taken by no evaluator of ours and are never down-weighted for it.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from enum import StrEnum

NOISE_FLOOR = 0.05  # log-scale sd of one attempt's speedup, at least (about 5%)
NOISE_Z = 3.0  # "beyond noise": this many standard deviations
IQR_TO_SD = 1.349  # IQR of a normal distribution in standard deviations
# Re-measurements of one kernel are one state only when their signatures agree within this squared
# euclidean distance, raw (for a source at scale 1, similarity >= 0.95): timing noise moves a
# signature by far less, another problem size or a changed environment by more, and those stay
# states of their own.
MERGE_RADIUS_SQ = 0.05
SUPERSEDED_EVALUATOR_WEIGHT = 0.25
STALE_SIGNATURE_WEIGHT = 0.5
SEPARATE_BUILD_WEIGHT = 0.5
# The first evaluator that counted the admitted object (agent.evaluator.EVALUATOR_VERSION 3).
ADMITTED_OBJECT_EVALUATOR = 3
# Counter sources measured by no evaluator of this project: their evaluator_version is absent by nature.
EXTERNAL_COUNTER_SOURCES = frozenset({"kernelbench_timing"})
RAN_OUTCOMES = frozenset({"kept", "discarded"})


class ContradictionKind(StrEnum):
    SPEEDUP = "speedup"  # helps beyond noise in one attempt, hurts beyond noise in another
    OUTCOME = "outcome"  # the same child ran correctly once and failed another time


@dataclass(frozen=True)
class AttemptEvidence:
    """One attempt as consolidation sees it (from the graph: the attempt and its two measurements)."""

    attempt_key: str
    outcome: str
    log_speedup: float | None  # None: the child did not run
    child_kernel_id: str
    noise: float  # log-scale sd of log_speedup (attempt_noise)
    evaluator_version: int | None = None  # of the parent state's measurement

    @property
    def ran(self) -> bool:
        return self.log_speedup is not None and self.outcome in RAN_OUTCOMES

    @property
    def helps(self) -> bool:
        return self.ran and self.log_speedup is not None and self.log_speedup - NOISE_Z * self.noise > 0

    @property
    def hurts(self) -> bool:
        return self.ran and self.log_speedup is not None and self.log_speedup + NOISE_Z * self.noise < 0


def relative_spread(median_ns: float | None, iqr_ns: float | None) -> float:
    """sd / median of one timing from its IQR; 0 when either is missing or not positive."""
    if median_ns is None or iqr_ns is None or median_ns <= 0 or iqr_ns < 0:
        return 0.0
    return iqr_ns / IQR_TO_SD / median_ns


def attempt_noise(
    parent_median_ns: float | None,
    parent_iqr_ns: float | None,
    child_median_ns: float | None,
    child_iqr_ns: float | None,
) -> float:
    """Log-scale sd of an attempt's log speedup: both timings' relative spreads, at least NOISE_FLOOR."""
    spread = math.hypot(
        relative_spread(parent_median_ns, parent_iqr_ns), relative_spread(child_median_ns, child_iqr_ns)
    )
    return max(NOISE_FLOOR, spread)


@dataclass(frozen=True)
class GroupSummary:
    """Repeated evidence for one (state, transform, setting): count, mean and spread of the log speedup."""

    attempts: int
    ran: int
    mean_log_speedup: float | None  # over the attempts that ran
    sd_log_speedup: float | None  # sample sd; None below 2 runs
    min_log_speedup: float | None
    max_log_speedup: float | None
    noise: float  # root mean square of the attempts' noise


def summarize(group: Sequence[AttemptEvidence]) -> GroupSummary:
    gains = [e.log_speedup for e in group if e.ran and e.log_speedup is not None]
    noise = math.sqrt(sum(e.noise**2 for e in group) / len(group)) if group else NOISE_FLOOR
    return GroupSummary(
        attempts=len(group),
        ran=len(gains),
        mean_log_speedup=statistics.fmean(gains) if gains else None,
        sd_log_speedup=statistics.stdev(gains) if len(gains) >= 2 else None,
        min_log_speedup=min(gains) if gains else None,
        max_log_speedup=max(gains) if gains else None,
        noise=noise,
    )


@dataclass(frozen=True)
class Contradiction:
    """Evidence of one (state, transform, setting) that disagrees beyond noise; flagged for re-measurement."""

    kinds: tuple[ContradictionKind, ...]
    attempt_keys: tuple[str, ...]  # every attempt of the group, sorted (the evidence to look at)
    helps: int
    hurts: int
    failed_twins: int  # failures whose child also ran correctly in another attempt
    summary: GroupSummary

    @property
    def fingerprint(self) -> str:
        """Changes exactly when what the contradiction is about changes (its attempts or kinds)."""
        return ",".join(k.value for k in self.kinds) + "|" + ",".join(self.attempt_keys)


def find_contradiction(group: Sequence[AttemptEvidence]) -> Contradiction | None:
    """The group's contradiction, or None. Only evidence of one evaluator version is compared: a
    disagreement between an old and a new evaluator is what the version bump was for, not a conflict."""
    by_version: dict[int | None, list[AttemptEvidence]] = {}
    for evidence in group:
        by_version.setdefault(evidence.evaluator_version, []).append(evidence)
    kinds: set[ContradictionKind] = set()
    helps = hurts = twins = 0
    for same in by_version.values():
        h = sum(e.helps for e in same)
        u = sum(e.hurts for e in same)
        if h and u:
            kinds.add(ContradictionKind.SPEEDUP)
        ran_children = {e.child_kernel_id for e in same if e.ran}
        t = sum(1 for e in same if not e.ran and e.child_kernel_id in ran_children)
        if t:
            kinds.add(ContradictionKind.OUTCOME)
        helps, hurts, twins = helps + h, hurts + u, twins + t
    if not kinds:
        return None
    return Contradiction(
        kinds=tuple(sorted(kinds)),
        attempt_keys=tuple(sorted(e.attempt_key for e in group)),
        helps=helps,
        hurts=hurts,
        failed_twins=twins,
        summary=summarize(group),
    )


def current_evaluator(versions: Iterable[int | None]) -> int | None:
    """The newest evaluator that measured in the namespace (None when none did: imports only)."""
    known = [v for v in versions if v is not None]
    return max(known) if known else None


def version_weight(
    *,
    evaluator_version: int | None,
    counter_source: str,
    signature_version: int | None,
    newest_evaluator: int | None,
    current_signature: int,
    counters_separate_build: bool = False,
) -> float:
    """How much a measured state's evidence counts (1.0: current). See the module docstring."""
    weight = 1.0
    # Only beside counters of admitted objects: until one is measured in the namespace, all its cache
    # counters are of one kind, and the ranking among them stays what the release answered.
    if counters_separate_build and (newest_evaluator or 0) >= ADMITTED_OBJECT_EVALUATOR:
        weight *= SEPARATE_BUILD_WEIGHT
    # A measurement without a version predates evaluator 2 (schema 0005): it is evaluator 1.
    measured_here = counter_source not in EXTERNAL_COUNTER_SOURCES
    if measured_here and newest_evaluator is not None and (evaluator_version or 1) < newest_evaluator:
        weight *= SUPERSEDED_EVALUATOR_WEIGHT
    if (signature_version or 1) < current_signature:
        weight *= STALE_SIGNATURE_WEIGHT
    return weight


def same_state(
    a: Sequence[float] | None,
    b: Sequence[float] | None,
    dims_a: Sequence[int] | None = None,
    dims_b: Sequence[int] | None = None,
) -> bool:
    """Do two signatures of one kernel agree within re-measurement noise (MERGE_RADIUS_SQ)?

    Signature version 2 masks what was not measured (`signature_dims`: the measured dimensions; the
    stored vector holds 0.0 elsewhere). Two states are the same only if they measured the same
    dimensions, and their raw squared distance over those is renormalised to the whole signature
    (x len / measured): a noise threshold in raw units, not retrieval's similarity (core/signature.py
    masked_similarity scales CPU dimensions and has a unit per source). Without dims (both None) every
    dimension counts."""
    if a is None or b is None or len(a) != len(b):
        return False
    if dims_a is None and dims_b is None:
        dims: Sequence[int] = range(len(a))
    else:
        dims = sorted(dims_a or ())
        if not dims or dims != sorted(dims_b or ()):
            return False
    d2 = sum((a[i] - b[i]) ** 2 for i in dims)
    return d2 * len(a) / len(dims) <= MERGE_RADIUS_SQ
