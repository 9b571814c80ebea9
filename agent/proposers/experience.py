"""The experience proposer: retrieve what worked from similar measured states, then choose by bandit.

Each step it asks the graph (through the client) which transforms worked on kernels whose *counter
signature* resembles the current kernel's on this target (mode `counters`; mode `text` retrieves by
source similarity instead and is the comparison baseline). Every applicable transform is an arm of a
Thompson-sampling bandit: a Beta prior on "this transform gets kept" and a Normal prior on its log
speedup, both built from the retrieved evidence (attempts, successes, weighted log speedup, weighted
by how much of it there is), updated with this run's own outcomes. Transforms without evidence keep
a flat prior, so they are still explored. Parameters are chosen the same way one level down: each
applicable setting is drawn from its own evidence (`by_params`: a setting seen to be harmful on
similar states, such as a fine-grained dynamic schedule, is avoided; one seen to help is preferred),
and a transform is valued by the best setting still open to it.

How much the evidence counts (`evidence_weight`) and what a failed attempt is worth
(`failure_log_speedup`) come with the retrieve response, so this run's own attempts are scored on the
service's scale without this module knowing how the service scores.
"""

from __future__ import annotations

import logging
import math
import random
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from kernelgraph.agent.proposers.base import (
    Candidate,
    HistoryEntry,
    Proposal,
    ProposalContext,
    candidates_by_transform,
)
from kernelgraph.agent.results import Outcome
from kernelgraph.agent.vocabulary import query_vocabulary
from kernelgraph.client import ExperienceClient
from kernelgraph.core.errors import KernelGraphError
from kernelgraph.core.models import (
    ParamEvidence,
    RetrievalMode,
    RetrievedTransform,
    RetrieveRequest,
    RetrieveResponse,
)

log = logging.getLogger(__name__)

# The log "speedup" of this run's attempts that did not run, until a retrieve response gives the
# service's value (a run whose retrievals all fail has no evidence to be consistent with).
DEFAULT_FAILURE_GAIN = -0.1
GAIN_SIGMA = 0.5  # spread of one attempt's log speedup around a transform's mean
PRIOR_GAIN = 0.05  # mildly optimistic: an untried transform is assumed worth a look
MAX_EVIDENCE_WEIGHT = 20.0  # evidence never counts for more than this many of this run's own tries
MIN_SETTING_WEIGHT = 0.5  # a parameter setting needs this much similarity-weighted evidence to stand alone


@dataclass(frozen=True)
class ArmPosterior:
    """What the bandit believes about one transform before sampling."""

    transform: str
    alpha: float  # Beta(alpha, beta) on "kept"
    beta: float
    gain_mean: float  # Normal on the log speedup of one attempt
    gain_sd: float
    evidence_attempts: int


def posterior(
    transform: str,
    evidence: RetrievedTransform | None,
    run: Sequence[HistoryEntry],
    failure_gain: float = DEFAULT_FAILURE_GAIN,
) -> ArmPosterior:
    """The arm's prior from retrieved evidence, updated with this run's attempts of it.

    `failure_gain` is what an attempt of this run that did not run counts as: the response's
    `failure_log_speedup`, so the run's failures weigh what the evidence's failures weigh.
    """
    weight, successes, failures, gain_sum, attempts = 0.0, 0.0, 0.0, 0.0, 0
    if evidence is not None and evidence.attempts > 0:
        attempts = evidence.attempts
        # Similarity-weighted, and never more than this many of the run's own tries nor its attempts.
        weight = min(max(evidence.evidence_weight, 0.0), MAX_EVIDENCE_WEIGHT, float(evidence.attempts))
        rate = evidence.success_rate
        successes, failures = weight * rate, weight * (1.0 - rate)
        gain_sum = weight * evidence.weighted_log_speedup
    for entry in (e for e in run if e.judged):  # a step not judged says nothing of its transform
        kept = entry.outcome == Outcome.KEPT
        successes += 1.0 if kept else 0.0
        failures += 0.0 if kept else 1.0
        gain_sum += math.log(entry.speedup) if entry.speedup else failure_gain
        weight += 1.0
    n = 1.0 + weight  # one pseudo-observation of the optimistic prior
    return ArmPosterior(
        transform=transform,
        alpha=1.0 + successes,
        beta=1.0 + failures,
        gain_mean=(PRIOR_GAIN + gain_sum) / n,
        gain_sd=GAIN_SIGMA / math.sqrt(n),
        evidence_attempts=attempts,
    )


def sample_value(arm: ArmPosterior, rng: random.Random) -> float:
    """One Thompson draw: P(kept) times the log speedup (a loss counts fully)."""
    p = rng.betavariate(arm.alpha, arm.beta)
    gain = rng.gauss(arm.gain_mean, arm.gain_sd)
    return p * gain if gain > 0 else gain * (1.0 - p) + (p - 1.0) * 0.01


def setting_evidence(
    options: Sequence[Candidate], evidence: RetrievedTransform, prior_weight: float
) -> RetrievedTransform:
    """The transform's evidence narrowed to its best parameter setting that is still open to us.

    The transform-level figures average every setting tried, harmful ones included; since the
    parameters are then chosen from the evidence too, the transform is worth what its best open
    setting is worth. Falls back to the transform-level evidence when no setting has enough weight.
    """
    best: ParamEvidence | None = None
    for group in evidence.by_params:
        if group.weight < MIN_SETTING_WEIGHT or not any(
            params_match(o.params, group.params) for o in options
        ):
            continue
        if best is None or group.weighted_log_speedup > best.weighted_log_speedup:
            best = group
    if best is None:
        return evidence
    return evidence.model_copy(
        update={
            "attempts": best.attempts,
            "successes": best.successes,
            "success_rate": best.successes / best.attempts,
            "weighted_log_speedup": best.weighted_log_speedup,
            "evidence_weight": best.weight,
            "confidence": best.weight / (best.weight + prior_weight),  # as the service computes it
        }
    )


def params_match(params: Mapping[str, Any], example: Mapping[str, Any]) -> bool:
    """True when the evidence's parameters name the same values for every key they share (>= 1)."""
    shared = [k for k in params if k in example]
    return bool(shared) and all(params[k] == example[k] for k in shared)


class ExperienceProposer:
    """Retrieval-guided Thompson sampling over the applicable transforms (see the module docstring)."""

    def __init__(
        self,
        client: ExperienceClient,
        *,
        mode: RetrievalMode | str = RetrievalMode.COUNTERS,
        seed: int = 0,
        exclude_task: str | None = None,
        k: int = 20,
    ) -> None:
        self.client = client
        self.mode = RetrievalMode(mode)
        self.rng = random.Random(seed)
        self.exclude_task = exclude_task
        self.k = k
        self.name = "experience" if self.mode is RetrievalMode.COUNTERS else f"experience-{self.mode.value}"
        self.last_evidence: dict[str, RetrievedTransform] = {}
        self.last_posteriors: dict[str, ArmPosterior] = {}
        self.last_response: RetrieveResponse | None = None  # its signature and neighbours, for reports
        self.failure_gain = DEFAULT_FAILURE_GAIN  # the service's, once a response has said it
        self.prior_weight = 1.0  # likewise

    def retrieve(self, context: ProposalContext) -> dict[str, RetrievedTransform]:
        """The retrieved transforms for the current kernel, by name; empty when retrieval fails."""
        self.last_response = None
        request: dict[str, Any] = {
            "target": context.target.name,
            "mode": self.mode.value,
            "k": self.k,
            "limit": 20,
            "exclude_task": self.exclude_task,
            "transforms": query_vocabulary(context.task),  # evidence this task cannot use takes no slot
        }
        if self.mode in (RetrievalMode.COUNTERS, RetrievalMode.HYBRID):
            profile = context.profile
            counters = profile.recordable_counters if profile is not None else {}
            if not counters or profile is None:
                return {}
            request.update(counters=counters, counter_source=profile.counter_source)
        if self.mode in (RetrievalMode.TEXT, RetrievalMode.HYBRID):
            request["source"] = context.source
        if self.mode is RetrievalMode.LABEL:  # "what worked on this task?"
            request["tasks"] = [context.task.name]
        try:
            response = self.client.retrieve(RetrieveRequest.model_validate(request))
        except (KernelGraphError, ValueError) as exc:  # no evidence is a state, not a crash
            log.warning("retrieval failed (%s); choosing without evidence", exc)
            return {}
        self.last_response = response
        self.failure_gain, self.prior_weight = response.failure_log_speedup, response.prior_weight
        return {row.transform: row for row in response.transforms}

    def propose(self, context: ProposalContext) -> Proposal | None:
        by_transform = candidates_by_transform(context)
        if not by_transform:
            return None
        evidence = self.retrieve(context)
        self.last_evidence = evidence
        history: dict[str, list[HistoryEntry]] = defaultdict(list)
        for entry in context.history:
            history[entry.transform].append(entry)
        narrowed = {
            name: setting_evidence(by_transform[name], evidence[name], self.prior_weight)
            for name in by_transform
            if name in evidence
        }
        arms = {
            name: posterior(name, narrowed.get(name), history[name], self.failure_gain)
            for name in sorted(by_transform)
        }
        self.last_posteriors = arms
        draws = {name: sample_value(arm, self.rng) for name, arm in arms.items()}
        transform = max(draws, key=lambda name: draws[name])
        choice, why = self._params(by_transform[transform], evidence.get(transform))
        arm = arms[transform]
        found = evidence.get(transform)
        rationale = (
            f"{transform}: {arm.evidence_attempts} retrieved attempts"
            + (
                f" (success rate {found.success_rate:.2f}, score {found.score:+.3f})"
                if found
                else " (no evidence: exploring)"
            )
            + f", {len(history[transform])} in this run; Thompson draw {draws[transform]:+.3f}; {why}"
        )
        return Proposal(
            transform=choice.transform,
            params=dict(choice.params),
            config=choice.config,
            rationale=rationale[:2000],
            evidence=list(found.evidence_attempt_keys[:10]) if found else [],
            retrieval=retrieval_summary(self.last_response),
        )

    def _params(self, options: list[Candidate], evidence: RetrievedTransform | None) -> tuple[Candidate, str]:
        """Thompson sampling over the transform's open settings, each from its own evidence."""
        groups = evidence.by_params if evidence is not None else []
        best_draw, best_option, best_weight = -math.inf, options[0], 0.0
        for option in options:
            matching = [g for g in groups if params_match(option.params, g.params)]
            weight = sum(g.weight for g in matching)
            gain = sum(g.weight * g.weighted_log_speedup for g in matching)
            n = 1.0 + weight
            draw = self.rng.gauss((PRIOR_GAIN + gain) / n, GAIN_SIGMA / math.sqrt(n))
            if draw > best_draw:
                best_draw, best_option, best_weight = draw, option, weight
        why = (
            f"parameters drawn from {best_weight:.1f} weight of evidence for this setting"
            if best_weight > 0
            else "parameters without evidence (exploring)"
        )
        return best_option, why


def retrieval_summary(response: RetrieveResponse | None, top: int = 3) -> dict[str, Any] | None:
    """What one retrieval found, for a step's report: the neighbours, the best `top` transforms and,
    when it found fewer than k states, the service's explanation."""
    if response is None:
        return None
    return {
        "neighbours": response.neighbours,
        "transforms": [{"transform": t.transform, "score": round(t.score, 4), "attempts": t.attempts}
                       for t in response.transforms[:top]],
        "explanation": response.explanation.summary if response.explanation is not None else None,
    }  # fmt: skip
