"""Consolidating a graph written by an earlier release, after `schema apply`: nothing a user can ask about
is lost (lineage, transfer, evidence, every node), a second run changes nothing, retrieval still
recommends what the release recommended, and the targets' similarity is measured (schema 0017)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from kernelgraph.service import migrate
from kernelgraph.service.embeddings import MiniLMEmbedder
from kernelgraph.service.knowledge import KnowledgeService
from kernelgraph.service.target_similarity import OTHER_TARGET_WEIGHT, cross_target_weight
from tests.upgrade.questions import ask, older_signature, same_answer
from tests.upgrade.release_server import GRAPHS, RELEASES, release_graph

# What consolidation adds (contradictions, and the rollups of merged states: schema 0010) is not counted.
COUNT = (
    "MATCH (n) WHERE NOT n:Contradiction AND NOT n:EvidenceRollup "
    "RETURN labels(n)[0] AS label, count(*) AS n ORDER BY label"
)

SIMILARITIES = (
    "MATCH (a:HardwareTarget)-[s:TRANSFERS_LIKE]->(b:HardwareTarget) WHERE a.namespace IN $spaces "
    "RETURN a.namespace AS ns, a.name AS a, b.name AS b, s.rank_correlation AS rho, s.pairs AS pairs, "
    "s.measured_at IS NOT NULL AS dated"
)

pytestmark = [pytest.mark.neo4j, pytest.mark.slow]


@dataclass
class Consolidated:
    knowledge: KnowledgeService
    recorded: dict[str, Any]
    counts_before: list[dict[str, Any]]
    evidence_before: dict[str, list[dict[str, Any]]]
    reports: list[Any]
    similarities_before: int  # TRANSFERS_LIKE relationships after the upgrade, before consolidating
    spaces: list[str]


@pytest.fixture(scope="module", params=RELEASES)
def consolidated(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Consolidated]:
    """The release's graph on a server of its own, upgraded, then consolidated twice per namespace."""
    with release_graph(request.param, tmp_path_factory.mktemp(f"consolidate-{request.param}")) as (_, store):
        migrate.apply(store)
        knowledge = KnowledgeService(store, MiniLMEmbedder())
        recorded = json.loads((GRAPHS / request.param / "answers.json").read_text())
        _, counts = store.run_text(COUNT, {}, write=False)
        spaces = sorted({q["namespace"] for q in recorded["questions"]})
        _, keys = store.run_text(
            "MATCH (a:Attempt) WHERE a.namespace IN $spaces RETURN a.namespace AS ns, collect(a.attempt_key) AS keys",
            {"spaces": spaces}, write=False,
        )  # fmt: skip
        evidence = {row["ns"]: knowledge.evidence([row["ns"]], sorted(row["keys"])) for row in keys}
        _, similarities = store.run_text(SIMILARITIES, {"spaces": spaces}, write=False)
        reports = [(knowledge.consolidate(ns), knowledge.consolidate(ns)) for ns in spaces]
        yield Consolidated(knowledge, recorded, counts, evidence, reports, len(similarities), spaces)


def test_a_second_consolidation_of_an_upgraded_graph_changes_nothing(consolidated: Consolidated) -> None:
    assert consolidated.reports
    for first, second in consolidated.reports:
        assert first.states > 0
        assert second.changes == 0, second


def test_nothing_a_user_can_ask_about_is_lost(consolidated: Consolidated) -> None:
    knowledge = consolidated.knowledge
    _, counts = knowledge.store.run_text(COUNT, {}, write=False)
    assert counts == consolidated.counts_before  # every node kept
    for namespace, before in consolidated.evidence_before.items():
        assert knowledge.evidence([namespace], sorted(e["attempt_key"] for e in before)) == before
    for question in consolidated.recorded["questions"]:
        if question["call"] in ("lineage", "transfer"):
            assert same_answer(question["answer"], ask(knowledge, question)), question


def test_retrieval_still_recommends_what_the_release_recommended(consolidated: Consolidated) -> None:
    """Merging re-measurements reads the same evidence at the state's similarity: scores may move a
    little, the recommendations (the top transform and the set ranked) do not."""
    asked = 0
    for question in consolidated.recorded["questions"]:
        if question["call"] != "retrieve" or not question["answer"] or older_signature(question):
            continue
        asked += 1
        answer = ask(consolidated.knowledge, question)
        assert answer, question["request"]
        assert answer[0]["transform"] == question["answer"][0]["transform"], (question["request"], answer)
        assert {t["transform"] for t in answer} == {t["transform"] for t in question["answer"]}
    assert asked, "the fixture must hold retrieval questions this release can still ask"


def test_consolidation_stores_the_transfer_matrix_as_target_similarity(consolidated: Consolidated) -> None:
    """The upgraded graph has no measured similarity; consolidation stores the transfer matrix's rank
    correlation of every pair of targets resting on 3 or more effects, and retrieval weighs by it (the
    prior where none is measured)."""
    assert consolidated.similarities_before == 0
    knowledge = consolidated.knowledge
    _, rows = knowledge.store.run_text(SIMILARITIES, {"spaces": consolidated.spaces}, write=False)
    stored = {(r["ns"], r["a"], r["b"]): (r["rho"], r["pairs"]) for r in rows if r["dated"]}
    assert len(stored) == len(rows)
    expected = {
        (ns, c.source, c.destination): (c.rank_correlation, c.pairs)
        for ns in consolidated.spaces
        for c in knowledge.transfer_matrix([ns], resamples=0).cells
        if c.source < c.destination and c.rank_correlation is not None and c.pairs >= 3
    }
    # The fixtures' targets share fewer than 3 effects per pair: none is measured, all weigh the prior
    # (tests/service/test_target_similarity.py covers measured weights).
    assert stored.keys() == expected.keys()
    for pair, (rho, pairs) in expected.items():
        assert stored[pair] == (pytest.approx(rho), pairs)
    asked = 0
    for question in consolidated.recorded["questions"]:
        if question["call"] != "retrieve":
            continue
        ns, target = question["namespace"], question["request"]["target"]
        for weight in knowledge.retrieve([ns], {"mode": "global", "target": target}).target_weights:
            measured = stored.get((ns, *sorted((target, weight.target))))
            assert weight.basis == ("measured" if measured else "prior"), (ns, target, weight)
            assert weight.weight == pytest.approx(
                cross_target_weight(*measured) if measured else OTHER_TARGET_WEIGHT
            )
            asked += 1
    assert asked, "the fixtures hold retrievals with other targets"
