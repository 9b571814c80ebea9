"""Cross-target evidence weighs by the measured similarity of the targets (docs/retrieval.md): on a real
Neo4j, consolidation measures two other targets against the query target, one ranking transforms as it
does and one oppositely; the opposite one's evidence then weighs less and the ranking changes, and
before anything is measured each weighs the prior."""

from __future__ import annotations

from typing import Any

import pytest

from kernelgraph.service.knowledge import KnowledgeService
from kernelgraph.service.store import GraphStore
from kernelgraph.service.target_similarity import OTHER_TARGET_WEIGHT, SHRINK_PAIRS, cross_target_weight
from tests import factories

pytestmark = pytest.mark.neo4j

QUERY, LIKE, OPPOSITE = "cpu-query", "cpu-like", "cpu-opposite"
KERNELS, TRANSFORMS = 8, ("unroll", "tile", "fuse")


def _attempt(key: str, target: str, transform: str, speedup: float, task: str, parent: str) -> dict[str, Any]:
    return factories.attempt(
        key, transform=transform, speedup=speedup, target_name=target, task=task,
        outcome="kept" if speedup > 1 else "discarded",
        parent_source=parent, child_source=f"{parent} /* {transform} {target} */",
    )  # fmt: skip


def _transfer_evidence() -> list[dict[str, Any]]:
    """The same transform on the same kernel on all three targets: LIKE ranks the effects as QUERY
    does, OPPOSITE in reverse (speedups 3 - s: perfectly anti-ranked)."""
    records = []
    for i in range(KERNELS):
        parent = f"void shared_{i}(void) {{}}"
        for j, transform in enumerate(TRANSFORMS):
            speedup = 0.6 + 0.075 * (i * len(TRANSFORMS) + j)  # 0.6 .. 2.325, all distinct
            for target, on_target in ((QUERY, speedup), (LIKE, speedup * 1.1), (OPPOSITE, 3.0 - speedup)):
                records.append(
                    _attempt(f"{target}-{transform}:{i}", target, transform, on_target, "matmul", parent)
                )
    return records


def _probe_evidence() -> list[dict[str, Any]]:
    """On task `probe`, only the other targets measured: LIKE saw `tile` give 1.5x, OPPOSITE saw
    `vectorize` give 2x. Weighed alike, vectorize ranks first; weighed by similarity, tile does."""
    return [
        _attempt("probe-like:0", LIKE, "tile", 1.5, "probe", "void probe_like(void) {}"),
        _attempt("probe-opposite:0", OPPOSITE, "vectorize", 2.0, "probe", "void probe_opposite(void) {}"),
    ]


def test_the_weight_rule() -> None:
    assert cross_target_weight(None, 0) == OTHER_TARGET_WEIGHT
    assert cross_target_weight(0.9, 0) == OTHER_TARGET_WEIGHT
    assert cross_target_weight(1.0, SHRINK_PAIRS) == pytest.approx((1.0 + OTHER_TARGET_WEIGHT) / 2)
    assert cross_target_weight(-0.8, 10_000) < 0.002  # ranks transforms oppositely: about nothing
    assert cross_target_weight(-0.8, 30) == cross_target_weight(0.0, 30) < OTHER_TARGET_WEIGHT
    assert cross_target_weight(0.95, 1_000) == pytest.approx(0.95, abs=0.01)


def test_evidence_from_an_opposite_target_weighs_less_and_changes_the_ranking(
    store: GraphStore, namespace: str
) -> None:
    knowledge = KnowledgeService(store)
    knowledge.upsert_targets(
        namespace, [factories.target(QUERY), factories.target(LIKE), factories.target(OPPOSITE)]
    )
    knowledge.record_attempts(namespace, _transfer_evidence() + _probe_evidence())
    request = {"mode": "label", "target": QUERY, "tasks": ["probe"], "limit": 5}

    before = knowledge.retrieve([namespace], request)
    assert {w.target: (w.basis, w.weight) for w in before.target_weights} == {
        LIKE: ("prior", OTHER_TARGET_WEIGHT), OPPOSITE: ("prior", OTHER_TARGET_WEIGHT)}  # fmt: skip
    assert [t.transform for t in before.transforms] == ["vectorize", "tile"]

    report = knowledge.consolidate(namespace)
    assert report.target_similarities == 3  # query-like, query-opposite, like-opposite
    assert knowledge.consolidate(namespace).target_similarities == 0  # unchanged evidence: nothing written
    pairs = KERNELS * len(TRANSFORMS)
    matrix = {(c.source, c.destination): c for c in knowledge.transfer_matrix([namespace], resamples=0).cells}

    after = knowledge.retrieve([namespace], request)
    weights = {w.target: w for w in after.target_weights}
    for other, rho in ((LIKE, 1.0), (OPPOSITE, -1.0)):
        weight = weights[other]
        assert (weight.basis, weight.pairs) == ("measured", pairs) and weight.measured_at
        # the transfer matrix's own figure, stored by consolidation
        assert weight.rank_correlation == pytest.approx(matrix[(QUERY, other)].rank_correlation)
        assert weight.rank_correlation == pytest.approx(rho)
        assert weight.weight == pytest.approx(cross_target_weight(rho, pairs))
    assert weights[OPPOSITE].weight < OTHER_TARGET_WEIGHT < weights[LIKE].weight
    assert [t.transform for t in after.transforms] == ["tile", "vectorize"]
    by_name = {t.transform: t for t in after.transforms}
    assert by_name["vectorize"].evidence_weight == pytest.approx(weights[OPPOSITE].weight)
    assert by_name["tile"].evidence_weight == pytest.approx(weights[LIKE].weight)

    # Retrieving for the opposite target: the query target now weighs little there too (symmetric).
    mirrored = {
        w.target: w for w in knowledge.retrieve([namespace], {**request, "target": OPPOSITE}).target_weights
    }
    assert mirrored[QUERY].weight == pytest.approx(weights[OPPOSITE].weight)
