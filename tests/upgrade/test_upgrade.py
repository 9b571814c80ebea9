"""Users keep their graphs across releases: a graph written by an earlier release, loaded from its dump
and upgraded with `schema apply`, answers retrieve, lineage and transfer as that release did. Then, on
the same server, consolidated: nothing a user can ask about is lost, a second run changes nothing,
retrieval still recommends what the release recommended, and the targets' similarity is measured
(schema 0017). One server per release serves both (a start costs 25-45 s on a loaded CI machine).

Each folder under tests/fixtures/graphs/ was written by scripts/upgrade_fixture.py from the release it
names (answers.json says which commit)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from kernelgraph.core.settings import Settings
from kernelgraph.core.signature import (
    SIGNATURE_VERSION,
    CounterSource,
    compute_signature,
    source_dimensions,
    source_index,
    source_property,
)
from kernelgraph.service import migrate
from kernelgraph.service.embeddings import MiniLMEmbedder
from kernelgraph.service.knowledge import KnowledgeService
from kernelgraph.service.neo4j_local import LocalNeo4j
from kernelgraph.service.recording import YARDSTICK_PROPERTIES
from kernelgraph.service.store import GraphStore, open_driver
from kernelgraph.service.target_similarity import OTHER_TARGET_WEIGHT, cross_target_weight
from kernelgraph.service.targets import peaks_of
from tests import factories
from tests.upgrade.questions import ask, exact_text_search, older_signature, same_answer, same_transforms
from tests.upgrade.release_server import GRAPHS, RELEASES, free_port, release_graph

pytestmark = [pytest.mark.neo4j, pytest.mark.slow]

# The migrations that re-sign stored measurements -> the signature version they re-sign from.
RESIGNING_FROM = {7: 1, 18: 2, 19: 3}
RESIGNING = set(RESIGNING_FROM)


@dataclass
class Upgraded:
    release: str
    server: LocalNeo4j
    knowledge: KnowledgeService
    recorded: dict[str, Any]
    applied: list[int]  # the migrations this upgrade applied (versions)

    @property
    def resigned(self) -> bool:
        """Written before the current signature, so migration 0007 (from signature 1), 0018 (from 2) or
        0019 (from 3) re-signed it from its raw counters: the first of them to run re-signs to the
        current signature, and the later ones find nothing left to do."""
        return bool(RESIGNING & set(self.applied))

    @property
    def old_vector(self) -> str:
        """Where the re-signing kept the vector it replaced: the release's signature version."""
        first = min(RESIGNING & set(self.applied))
        return f"signature_v{RESIGNING_FROM[first]}"


@pytest.fixture(scope="module", params=RELEASES)
def upgraded(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Upgraded]:
    """The release's graph on a server of its own, upgraded."""
    home = tmp_path_factory.mktemp(f"upgrade-{request.param}")
    with release_graph(request.param, home) as (server, store):
        applied = [state.version for state in migrate.apply(store)]
        recorded = json.loads((GRAPHS / request.param / "answers.json").read_text())
        yield Upgraded(request.param, server, KnowledgeService(store, MiniLMEmbedder()), recorded, applied)


def test_upgrade_applies_every_pending_migration_and_a_second_apply_changes_nothing(
    upgraded: Upgraded,
) -> None:
    states = migrate.status(upgraded.knowledge.store)
    assert states and all(state.applied for state in states)
    assert migrate.apply(upgraded.knowledge.store) == []


def test_upgraded_graph_answers_as_the_release_that_wrote_it(upgraded: Upgraded) -> None:
    knowledge = upgraded.knowledge
    questions = upgraded.recorded["questions"]
    assert {q["call"] for q in questions} == {"retrieve", "lineage", "transfer"}
    assert any(q["call"] == "retrieve" and q["answer"] for q in questions), (
        "the fixture must hold real answers"
    )
    differing = [
        (q["call"], q.get("request", q.get("kernel_id")), q["answer"], answer)
        for q in questions
        if not older_signature(q)
        and not (same_transforms if exact_text_search(q) else same_answer)(
            q["answer"], answer := ask(knowledge, q)
        )
    ]
    assert not differing, (
        f"{len(differing)} of {len(questions)} answers changed after the upgrade: {differing[:2]}"
    )


def test_upgrade_resigns_every_measurement_from_its_raw_counters(upgraded: Upgraded) -> None:
    """Migrations 0007 and 0018: every measurement carries the current signature, recomputed from its
    kept counters and its target's peaks; complete explored ones also carry their per-source vector, of
    the new length; the old vector is kept under its version. A graph written at the current signature
    is left as its release wrote it."""
    store = upgraded.knowledge.store
    _, rows = store.run_text(
        "MATCH (m:Measurement) OPTIONAL MATCH (h:HardwareTarget {namespace: m.namespace, name: m.target}) "
        "RETURN properties(m) AS m, properties(h) AS h",
        {}, write=False,
    )  # fmt: skip
    assert rows
    # Every release: only explored states that are complete and not merged carry a per-source vector.
    for row in rows:
        m = row["m"]
        indexed = bool(m.get("explored") and m.get("signature_complete") and not m.get("merged_into"))
        assert (m.get(source_property(m["counter_source"])) is not None) == indexed, m["measurement_id"]
    if not upgraded.resigned:
        assert all(
            r["m"]["signature_version"] == SIGNATURE_VERSION and "signature_v2" not in r["m"] for r in rows
        )
        return
    complete = 0
    for row in rows:
        m = row["m"]
        assert m["signature_version"] == SIGNATURE_VERSION and m[upgraded.old_vector] is not None
        expected = compute_signature(
            m["counter_source"], json.loads(m["counters_json"]), peaks_of(row["h"] or {})
        )
        assert m["signature_dims"] == list(expected.measured)
        # Where consolidation put it (merged into another state, or parked: out of the vector indexes).
        held = next(
            m[k] for k in ("signature", "merged_signature", "parked_signature") if m.get(k) is not None
        )
        assert held == pytest.approx(list(expected.vector))
        assert m["signature_complete"] == expected.complete
        for source in CounterSource:
            stored = m.get(source_property(source))
            # Only explored states are in the vector indexes (schema 0012), and no merged one (0009).
            in_index = m.get("explored") and not m.get("merged_into")
            if expected.complete and source.value == m["counter_source"] and in_index:
                assert stored == pytest.approx(list(expected.source_vector or ()))
                assert len(stored) == len(source_dimensions(source))
                complete += 1
            else:
                assert stored is None
        # Cache counters of signature 1 were simulated on the small inputs: never a dimension now.
        if (
            m["counter_source"] == "cpu_cachegrind"
            and json.loads(m["counters_json"]).get("counter_scale", 1) != 1
        ):
            assert not {3, 4, 2} & set(m["signature_dims"])
    _, indexes = store.run_text(
        "SHOW INDEXES YIELD name, options RETURN name, options.indexConfig['vector.dimensions'] AS dims",
        {}, write=False,
    )  # fmt: skip
    dims = {r["name"]: r["dims"] for r in indexes}
    assert "measurement_signature" not in dims
    # Each source's vector index has the current signature's dimension count for that source.
    assert {source_index(s): len(source_dimensions(s)) for s in CounterSource}.items() <= dims.items()


def test_upgraded_graph_still_retrieves_by_counters(upgraded: Upgraded) -> None:
    """Asked anew with signature 2 (the stored state's own measured dimensions, or, for a graph that
    migration 0007 re-signed, its raw counters), retrieval finds the state itself as the nearest
    neighbour and answers with transforms."""
    knowledge = upgraded.knowledge
    namespaces = sorted({q["namespace"] for q in upgraded.recorded["questions"]})
    for namespace in namespaces:
        _, rows = knowledge.store.run_text(
            "MATCH (m:Measurement {namespace: $ns}) "
            "WHERE m.explored AND m.signature IS NOT NULL AND size(m.signature_dims) > 0 "
            "RETURN m.measurement_id AS id, m.target AS target, m.signature AS signature, "
            "m.signature_dims AS dims, m.counter_source AS source, m.counters_json AS counters "
            "ORDER BY m.measurement_id LIMIT 3",
            {"ns": namespace}, write=False,
        )  # fmt: skip
        assert rows, f"no explored state with a measured dimension in {namespace}"
        for row in rows:
            query = [v if i in row["dims"] else None for i, v in enumerate(row["signature"])]
            found = knowledge.retrieve([namespace], {"target": row["target"], "signature": query, "k": 10})
            assert row["id"] in found.neighbour_ids and found.transforms, (namespace, row["id"])
            if not upgraded.resigned:
                continue  # its release stored signatures its clients sent, not ones computed from counters
            by_counters = knowledge.retrieve([namespace], {
                "target": row["target"], "counters": json.loads(row["counters"]), "counter_source": row["source"],
            })  # fmt: skip
            assert by_counters.signature == query and row["id"] in by_counters.neighbour_ids


def test_dump_and_load_round_trip_keep_the_graph(upgraded: Upgraded, tmp_path: Path) -> None:
    """`kernelgraph neo4j dump` of the upgraded graph (server stopped and restarted around it) loads into
    a fresh server with the same nodes. Every release upgrades to the same schema, so the newest one
    stands for all (two server starts a release)."""
    if upgraded.release != RELEASES[-1]:
        pytest.skip("the dump round trip runs on the newest release's upgraded graph")
    knowledge = upgraded.knowledge
    count = "MATCH (n) RETURN labels(n)[0] AS label, count(*) AS n ORDER BY label"
    _, before = knowledge.store.run_text(count, {}, write=False)
    settings = Settings(data_home=tmp_path / "copy", bolt_port=free_port(), http_port=free_port(),
                        neo4j_heap="512m", neo4j_pagecache="128m")  # fmt: skip
    dump = upgraded.server.dump(tmp_path / "copy.dump")
    assert upgraded.server.status().running, "dump restarts a server it stopped"
    copy = LocalNeo4j(settings)
    copy.load(dump)
    copy.start()
    try:
        with open_driver(settings) as driver:
            _, after = GraphStore(driver, settings.neo4j_database).run_text(count, {}, write=False)
    finally:
        copy.stop()
    assert before and after == before


# Beside the library and the roofline (schema 0016), as sent; the service adds the speedups.
YARDSTICKS = {"library": "torch 2.5.1, 2 threads", "library_median_ns": 2e4, "naive_median_ns": 9.5e4,
              "achieved_gflops": 120.0, "achieved_gbps": 3.5, "roofline_fraction": 0.31}  # fmt: skip


def test_upgraded_measurements_gain_no_invented_yardsticks_and_new_ones_carry_theirs(
    upgraded: Upgraded,
) -> None:
    """Absent means not measured: the release's measurements stay without a library or roofline
    figure; the index fast_p queries use exists; a new attempt's measurement stores its yardsticks."""
    store = upgraded.knowledge.store
    _, indexes = store.run_text(
        "SHOW INDEXES YIELD name, properties WHERE name = 'measurement_vs_library' RETURN properties",
        {},
        write=False,
    )
    assert indexes and indexes[0]["properties"] == ["namespace", "task", "speedup_vs_library"]
    _, old = store.run_text(
        "MATCH (m:Measurement) WHERE NOT m.namespace STARTS WITH 'yardsticks-' RETURN count(m) AS n, "
        "count(m.speedup_vs_library) + count(m.roofline_fraction) + count(m.library) AS marks", {}, write=False,
    )  # fmt: skip
    # A release written before schema 0016 had no yardsticks; a later one stored those it was sent.
    assert old[0]["n"] > 0 and (old[0]["marks"] == 0 or 16 not in upgraded.applied)
    namespace = "yardsticks-upgrade"
    upgraded.knowledge.upsert_targets(namespace, [factories.target()])
    attempt = factories.attempt("yard-1:0", speedup=2.0)
    attempt["child_measurement"] = {**factories.measurement(1e4, parent_median_ns=2e4), **YARDSTICKS}
    upgraded.knowledge.record_attempts(namespace, [attempt])
    _, rows = store.run_text(
        "MATCH (m:Measurement {namespace: $ns}) RETURN m.median_ns AS median, m {"
        + ", ".join(f".{name}" for name in YARDSTICK_PROPERTIES) + "} AS marks ORDER BY median",
        {"ns": namespace}, write=False,
    )  # fmt: skip
    assert [row["median"] for row in rows] == [1e4, 1e6]
    assert rows[0]["marks"] == {**YARDSTICKS, "speedup_vs_library": 2.0, "speedup_vs_naive": 9.5}
    assert all(value is None for value in rows[1]["marks"].values())  # the parent was sent without them
    _, fast = store.run_text(
        "MATCH (m:Measurement) WHERE m.namespace = $ns AND m.task = 'matmul' AND m.speedup_vs_library > 1.0 "
        "RETURN count(m) AS n", {"ns": namespace}, write=False,
    )  # fmt: skip
    assert fast[0]["n"] == 1


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


@dataclass
class Consolidated:
    knowledge: KnowledgeService
    recorded: dict[str, Any]
    counts_before: list[dict[str, Any]]
    evidence_before: dict[str, list[dict[str, Any]]]
    reports: list[Any]
    similarities_before: int  # TRANSFERS_LIKE relationships after the upgrade, before consolidating
    spaces: list[str]


@pytest.fixture(scope="module")
def consolidated(upgraded: Upgraded) -> Consolidated:
    """The release's upgraded graph (after every test above: they read it as the upgrade left it),
    consolidated twice per namespace."""
    knowledge, store = upgraded.knowledge, upgraded.knowledge.store
    _, counts = store.run_text(COUNT, {}, write=False)
    spaces = sorted({q["namespace"] for q in upgraded.recorded["questions"]})
    _, keys = store.run_text(
        "MATCH (a:Attempt) WHERE a.namespace IN $spaces RETURN a.namespace AS ns, collect(a.attempt_key) AS keys",
        {"spaces": spaces}, write=False,
    )  # fmt: skip
    evidence = {row["ns"]: knowledge.evidence([row["ns"]], sorted(row["keys"])) for row in keys}
    _, similarities = store.run_text(SIMILARITIES, {"spaces": spaces}, write=False)
    reports = [(knowledge.consolidate(ns), knowledge.consolidate(ns)) for ns in spaces]
    return Consolidated(knowledge, upgraded.recorded, counts, evidence, reports, len(similarities), spaces)


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
