"""Study v3's retrieval, as the product does it: every retrieving arm retrieves at every step, for the
state of the current best config (the proposer's request, built from the step's profile: simulation.py
`state_of`), through the service's `retrieve` within the query's vocabulary, and every retrieval is
logged. Equal evidence volume: whatever the arm, it keeps the same k states (counters, text and hybrid
their k nearest; label and global k of theirs by a seeded shuffle; learned the k nearest by its fitted
metric among all the states the service offers) and their evidence is aggregated at weight 1 each
(similarity orders the states, it does not weigh them)."""

from __future__ import annotations

import json
import random
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from kernelgraph.bench.study.experience import stable_seed
from kernelgraph.bench.study.learned import LearnedKey, signature_vector
from kernelgraph.core.models import RetrievalMode, RetrievedTransform, RetrieveRequest, RetrieveResponse
from kernelgraph.core.signature import TargetPeaks


def equal_weight_transforms(
    knowledge: Any, namespace: str, request: RetrieveRequest, state_ids: Sequence[str]
) -> list[RetrievedTransform]:
    """The service's aggregation (cypher/aggregate_transforms.cypher, its constants and trust rules)
    over `state_ids`, each at similarity 1."""
    from kernelgraph.service.recorder import SERVICE
    from kernelgraph.service.retrieval import LEGACY_KEY, aggregate_rows, retrieved_transform
    from kernelgraph.service.target_similarity import target_weights

    def read(tx: Any) -> list[dict[str, Any]]:
        weights = target_weights(tx, [namespace], request.target)
        neighbours = dict.fromkeys(state_ids, 1.0)
        return aggregate_rows(tx, neighbours, [namespace], request, weights, [SERVICE.key_id, LEGACY_KEY])

    return [retrieved_transform(row) for row in knowledge.store.read_transaction(read)]


@dataclass
class RetrievalScope:
    """What one evaluation run may retrieve: its held-out task labels, the labels label retrieval
    draws from, and k."""

    exclude: Sequence[str]
    labels: Sequence[str]
    k: int | None  # None: every state the service finds (the next-target experiment: all of a target's)


@dataclass
class StepRetrieval:
    """An `ExperienceClient` for one arm's runs: each retrieve (one per step) re-keyed and re-scoped as
    the protocol says, answered by the service, cut to k states at weight 1, logged. Responses are
    cached by request (a run that keeps its best config asks the same again)."""

    knowledge: Any
    namespace: str
    arm: str
    mode: RetrievalMode
    scope: RetrievalScope
    peaks: TargetPeaks | None = None
    learned: LearnedKey | None = None
    vectors: Mapping[str, Mapping[str, float]] = field(default_factory=dict)  # measurement id -> signature
    log: Callable[[dict[str, Any]], None] | None = None
    context: dict[str, Any] = field(default_factory=dict)  # unit, seed: written into each log entry
    cache: dict[str, RetrieveResponse] = field(default_factory=dict)
    step: int = 0

    def retrieve(self, request: RetrieveRequest | dict[str, Any]) -> RetrieveResponse:
        req = request if isinstance(request, RetrieveRequest) else RetrieveRequest.model_validate(request)
        self.step += 1
        update: dict[str, Any] = {"exclude_tasks": list(self.scope.exclude), "exclude_task": None}
        if self.scope.k is not None:
            update["k"] = self.scope.k
        service_mode = RetrievalMode.GLOBAL if self.learned is not None else self.mode
        update["mode"] = service_mode
        if service_mode is RetrievalMode.LABEL:
            update["tasks"] = list(self.scope.labels)
        query = req.model_copy(update=update)
        key = json.dumps([self.arm, query.model_dump(mode="json")], sort_keys=True)
        cached = key in self.cache
        if not cached:
            self.cache[key] = self._answer(req, query, key)
        response = self.cache[key]
        if self.log:
            self.log({
                **self.context, "arm": self.arm, "step": self.step, "mode": self.mode.value, "cached": cached,
                "signature": response.signature, "neighbours": list(response.neighbour_ids),
                "transforms": [{"transform": r.transform, "score": r.score} for r in response.transforms],
            })  # fmt: skip
        return response

    def _answer(self, req: RetrieveRequest, query: RetrieveRequest, key: str) -> RetrieveResponse:
        from kernelgraph.service.inprocess import InProcessClient

        if query.mode is RetrievalMode.LABEL and not query.tasks:
            return _empty(query)
        answered = InProcessClient(self.knowledge, self.namespace).retrieve(query)
        ids = list(answered.neighbour_ids)
        if self.learned is not None:
            ids = self._nearest_learned(req, ids)
        elif query.mode in (RetrievalMode.LABEL, RetrievalMode.GLOBAL):
            random.Random(stable_seed(key)).shuffle(ids)
        ids = ids[: self.scope.k] if self.scope.k is not None else ids
        return answered.model_copy(update={
            "neighbours": len(ids), "neighbour_ids": ids, "neighbour_scores": [1.0] * len(ids),
            "transforms": equal_weight_transforms(self.knowledge, self.namespace, query, ids), "mode": self.mode,
        })  # fmt: skip

    def _nearest_learned(self, req: RetrieveRequest, candidates: Sequence[str]) -> list[str]:
        if self.learned is None or req.counters is None or req.counter_source is None or self.peaks is None:
            return []
        query = signature_vector(req.counter_source, req.counters, self.peaks)
        scored = []
        for m in candidates:
            state = self.vectors.get(m)
            d = None if state is None else self.learned.distance(query, state)
            if d is not None:
                scored.append((d, m))
        return [m for _, m in sorted(scored)]


def _empty(query: RetrieveRequest) -> RetrieveResponse:
    from kernelgraph.bench.study.arms import empty_response

    return empty_response(query.target, query.mode)
