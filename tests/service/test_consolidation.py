"""Consolidation on a real Neo4j: a graph seeded with duplicates and contradictions is merged and flagged
once, a second run changes nothing, retrieval ranks as before, nothing a user can ask about is lost,
and it runs beside concurrent writers."""

from __future__ import annotations

import json
import math
import statistics
import threading
import time
from typing import Any

import pytest

from kernelgraph.core.signature import SIGNATURE_DIM, source_dimensions, source_property, source_scales
from kernelgraph.service.consolidation import ConsolidationSchedule, consolidate
from kernelgraph.service.consolidation_rules import SUPERSEDED_EVALUATOR_WEIGHT
from kernelgraph.service.knowledge import KnowledgeService
from kernelgraph.service.store import GraphStore
from tests import factories
from tests.walking_oracle import walking_store

pytestmark = pytest.mark.neo4j

SIG_A = [0.5] * SIGNATURE_DIM
SIG_B = [0.55] * SIGNATURE_DIM
SIG_C = [0.45] * SIGNATURE_DIM
SIG_FAR = [0.9] * SIGNATURE_DIM


def attempt(key: str, state: str, signature: list[float], transform: str, speedup: float | None,
            outcome: str = "kept", *, median: float = 1e6, child: str | None = None,
            evaluator_version: int | None = 2, task: str = "matmul") -> dict[str, Any]:  # fmt: skip
    """An attempt from kernel `state` measured at `median` (another median: a re-measurement)."""
    parent_measurement = factories.measurement(median, list(signature))
    if evaluator_version is not None:
        parent_measurement.update(evaluator_version=evaluator_version, sandboxed=True)
    record = factories.attempt(
        key, transform=transform, speedup=speedup, outcome=outcome, task=task,
        parent_source=f"void kernel(void) {{ /* {state} */ }}",
        child_source=child or f"void kernel(void) {{ /* {state} {transform} {key} */ }}",
    )  # fmt: skip
    record["parent_measurement"] = parent_measurement
    if speedup is not None:
        record["child_measurement"] = factories.measurement(median / speedup, parent_median_ns=median)
    return record


def seeded() -> list[dict[str, Any]]:
    return [
        # Kernel A re-measured by three runs (three states, one kernel), each trying unroll: duplicates.
        attempt("run-1:0", "A", SIG_A, "unroll", 1.50, median=1.00e6),
        attempt("run-2:0", "A", SIG_A, "unroll", 1.55, median=1.01e6),
        attempt("run-3:0", "A", SIG_A, "unroll", 1.45, median=0.99e6),
        attempt("run-1:1", "A", SIG_A, "tile", 1.20, median=1.00e6),
        attempt("run-2:1", "A", SIG_A, "tile", None, "compile_error", median=1.01e6),
        # Kernel B: vectorize helped 2x once and halved the time another time: a speedup contradiction.
        attempt("run-4:0", "B", SIG_B, "vectorize", 2.0, child="void kernel(void) { /* B vec */ }"),
        attempt(
            "run-5:0",
            "B",
            SIG_B,
            "vectorize",
            0.5,
            "discarded",
            median=1.02e6,
            child="void kernel(void) { /* B vec */ }",
        ),
        # Kernel C: the same child ran correctly once and was judged incorrect once: an outcome contradiction.
        attempt("run-6:0", "C", SIG_C, "parallelize", 1.3, child="void kernel(void) { /* C par */ }"),
        attempt(
            "run-7:0", "C", SIG_C, "parallelize", None, "incorrect", child="void kernel(void) { /* C par */ }"
        ),
        # Kernel A at another size: the same source, a state of its own (its signature is far from A's).
        attempt("run-8:0", "A", SIG_FAR, "unroll", 1.1, median=3e6),
    ]


@pytest.fixture
def knowledge(store: GraphStore, namespace: str) -> KnowledgeService:
    service = KnowledgeService(store)
    service.upsert_targets(namespace, [factories.target()])
    return service


def ranking(
    knowledge: KnowledgeService, namespace: str, signature: list[float]
) -> list[tuple[str, float, int]]:
    response = knowledge.retrieve(
        [namespace], {"target": "cpu-test", "signature": signature, "k": 50, "limit": 20}
    )
    return [(t.transform, round(t.score, 9), t.attempts) for t in response.transforms]


def count(store: GraphStore, cypher: str, namespace: str) -> int:
    records = store.driver.execute_query(cypher, ns=namespace, database_=store.database).records
    return int(records[0][0])


def test_first_run_merges_and_flags_the_second_changes_nothing(
    knowledge: KnowledgeService, store: GraphStore, namespace: str
) -> None:
    knowledge.record_attempts(namespace, seeded())
    dry = consolidate(store, namespace, dry_run=True)
    assert (
        count(store, "MATCH (:Measurement {namespace: $ns})-[r:MERGED_INTO]->() RETURN count(r)", namespace)
        == 0
    )
    assert count(store, "MATCH (x:Contradiction {namespace: $ns}) RETURN count(x)", namespace) == 0

    first = consolidate(store, namespace)
    assert (first.merged, first.contradictions_flagged, first.contradictions_open) == (3, 2, 2)
    # Every child measurement (no attempt started from one) left the index: 8 children were timed.
    assert first.parked == dry.parked == 8
    # Two states gain duplicates and are rolled up (A and B).
    assert first.rolled_up == dry.rolled_up == 2
    assert first.changes == dry.changes == 5 + 8 + 2
    # Kernel A's three states are one (2 merged) and B's two (1 merged).
    assert (
        count(store, "MATCH (:Measurement {namespace: $ns})-[r:MERGED_INTO]->() RETURN count(r)", namespace)
        == 3
    )
    kinds = store.driver.execute_query(
        "MATCH (x:Contradiction {namespace: $ns})-[:INVOLVES]->(a:Attempt) "
        "RETURN x.transform AS transform, x.kinds AS kinds, x.status AS status, collect(a.attempt_key) AS keys "
        "ORDER BY transform", ns=namespace, database_=store.database,
    ).records  # fmt: skip
    assert [(r["transform"], r["kinds"], r["status"], sorted(r["keys"])) for r in kinds] == [
        ("parallelize", ["outcome"], "open", ["run-6:0", "run-7:0"]),
        ("vectorize", ["speedup"], "open", ["run-4:0", "run-5:0"]),
    ]

    second = consolidate(store, namespace)
    assert second.changes == 0
    assert (second.merged, second.weighed, second.contradictions_flagged, second.contradictions_resolved) == (
        0,
        0,
        0,
        0,
    )
    assert second.already_merged == 3 and second.contradictions_open == 2


def test_retrieval_ranks_as_before_and_nothing_is_lost(
    knowledge: KnowledgeService, store: GraphStore, namespace: str
) -> None:
    knowledge.record_attempts(namespace, seeded())
    keys = [a["attempt_key"] for a in seeded()]
    queries = (("A", SIG_A), ("B", SIG_B), ("C", SIG_C), ("far", SIG_FAR))
    before = {name: ranking(knowledge, namespace, sig) for name, sig in queries}
    evidence_before = knowledge.evidence([namespace], keys)
    children = [r.child_kernel_id for r in knowledge.record_attempts(namespace, seeded())]
    lineage_before = [knowledge.lineage([namespace], kernel) for kernel in children]

    consolidate(store, namespace)

    after = {name: ranking(knowledge, namespace, sig) for name, sig in queries}
    assert after == before  # re-measurements have the same signature: the same weights, scores and ranks
    assert knowledge.evidence([namespace], keys) == evidence_before
    assert [knowledge.lineage([namespace], kernel) for kernel in children] == lineage_before
    assert count(store, "MATCH (a:Attempt {namespace: $ns}) RETURN count(a)", namespace) == len(keys)
    # The neighbours are fewer (one state per kernel) and the contradictions are reported.
    response = knowledge.retrieve(
        [namespace], {"target": "cpu-test", "signature": SIG_B, "k": 50, "limit": 20}
    )
    assert response.neighbours == 4  # A, B, C and A at another size
    vectorize = next(t for t in response.transforms if t.transform == "vectorize")
    assert vectorize.disputed == 1 and vectorize.by_params[0].disputed
    unroll = next(t for t in response.transforms if t.transform == "unroll")
    assert not unroll.disputed and unroll.by_params[0].sd_log_speedup is not None
    # The spread of every unroll attempt within reach: A's three and A at another size.
    assert unroll.by_params[0].sd_log_speedup == pytest.approx(
        statistics.stdev(math.log(x) for x in (1.5, 1.55, 1.45, 1.1))
    )


def test_superseded_evaluator_evidence_counts_less(
    knowledge: KnowledgeService, store: GraphStore, namespace: str
) -> None:
    knowledge.record_attempts(namespace, [
        attempt("old:0", "D", SIG_A, "fuse", 2.0, evaluator_version=None),  # before evaluator 2
        attempt("new:0", "E", SIG_A, "unroll", 1.5, evaluator_version=2),
    ])  # fmt: skip
    before = knowledge.retrieve([namespace], {"target": "cpu-test", "signature": SIG_A})
    report = consolidate(store, namespace)
    assert (report.newest_evaluator, report.superseded_evaluator_states, report.weighed) == (2, 1, 1)
    after = knowledge.retrieve([namespace], {"target": "cpu-test", "signature": SIG_A})
    weight = {t.transform: t.evidence_weight for t in before.transforms}
    weighed = {t.transform: t.evidence_weight for t in after.transforms}
    assert weighed["fuse"] == pytest.approx(weight["fuse"] * SUPERSEDED_EVALUATOR_WEIGHT)
    assert weighed["unroll"] == pytest.approx(weight["unroll"])
    assert [t.transform for t in before.transforms] == ["fuse", "unroll"]
    assert [t.transform for t in after.transforms] == ["unroll", "fuse"]
    assert consolidate(store, namespace).changes == 0


def test_consolidation_beside_concurrent_writers_loses_nothing(
    knowledge: KnowledgeService, store: GraphStore, namespace: str
) -> None:
    """Agents keep re-measuring kernel A and recording attempts while consolidation runs repeatedly."""
    knowledge.record_attempts(namespace, seeded())
    writes = [
        attempt(f"live-{i}:0", "A", SIG_A, ("unroll", "tile", "fuse")[i % 3], 1.1 + (i % 5) / 10,
                median=1e6 + 1_000 * (i + 10))
        for i in range(30)
    ]  # fmt: skip
    errors: list[BaseException] = []

    def writer() -> None:
        try:
            for record in writes:
                knowledge.record_attempts(namespace, [record])
        except BaseException as exc:  # reported by the assertion below
            errors.append(exc)

    thread = threading.Thread(target=writer)
    thread.start()
    runs = 0
    while thread.is_alive() or runs < 2:
        consolidate(store, namespace)
        runs += 1
    thread.join()
    assert not errors
    consolidate(store, namespace)
    assert consolidate(store, namespace).changes == 0
    total = len(seeded()) + len(writes)
    assert count(store, "MATCH (a:Attempt {namespace: $ns}) RETURN count(a)", namespace) == total
    assert count(store, "MATCH (e:StateEvidence {namespace: $ns}) RETURN sum(e.attempts)", namespace) == total
    # Every re-measurement of kernel A is one state now (A at another size stays apart: 4 states).
    assert count(store, "MATCH (m:Measurement {namespace: $ns}) WHERE m.explored AND m.merged_into IS NULL "
                        "RETURN count(m)", namespace) == 4  # fmt: skip
    response = knowledge.retrieve(
        [namespace], {"target": "cpu-test", "signature": SIG_A, "k": 50, "limit": 20}
    )
    assert sum(t.attempts for t in response.transforms) == total
    # No chains: a state others were merged into is never merged itself.
    assert count(store, "MATCH (:Measurement {namespace: $ns})-[:MERGED_INTO]->(:Measurement)-[:MERGED_INTO]->() "
                        "RETURN count(*)", namespace) == 0  # fmt: skip


def test_the_schedule_consolidates_every_namespace(
    knowledge: KnowledgeService, store: GraphStore, namespace: str
) -> None:
    knowledge.record_attempts(namespace, seeded())
    schedule = ConsolidationSchedule(store, 0.1)
    schedule.start()
    try:
        deadline = time.monotonic() + 60
        while schedule.runs < 1 and time.monotonic() < deadline:
            time.sleep(0.05)
    finally:
        schedule.stop()
    assert schedule.runs >= 1
    assert count(store, "MATCH (x:Contradiction {namespace: $ns}) RETURN count(x)", namespace) == 2


def test_a_merged_state_reads_all_its_evidence_and_leaves_room_for_others(
    knowledge: KnowledgeService, store: GraphStore, namespace: str
) -> None:
    """Kernel A measured six times fills the k = 4 nearest measurements alone before merging; after it,
    A is one state that reads all six runs' evidence and takes at most k / 4 slots, so B comes in."""
    again = [attempt(f"again-{i}:0", "A", SIG_A, "unroll", 1.5, median=1e6 + 1e4 * i) for i in range(6)]
    knowledge.record_attempts(namespace, again + seeded()[5:7])
    request = {"target": "cpu-test", "signature": SIG_A, "k": 4, "limit": 20}
    before = knowledge.retrieve([namespace], request)
    consolidate(store, namespace)
    after = knowledge.retrieve([namespace], request)
    assert before.neighbours == 4 and {t.transform: t.attempts for t in before.transforms} == {"unroll": 4}
    assert after.neighbours == 2  # A and B (B's two re-measurements are one state too)
    assert {t.transform: t.attempts for t in after.transforms} == {"unroll": 6, "vectorize": 2}
    # The merged duplicates left the vector index; their signatures are kept beside it.
    assert count(store, "MATCH (m:Measurement {namespace: $ns}) WHERE m.merged_into IS NOT NULL "
                        "AND m.signature IS NULL AND m.merged_signature IS NOT NULL RETURN count(m)", namespace) == 6  # fmt: skip


def test_the_command_names_a_bad_namespace() -> None:
    from typer.testing import CliRunner

    from kernelgraph.cli import app

    result = CliRunner().invoke(app, ["consolidate", "--namespace", "Bad Space!"])
    assert result.exit_code == 1
    assert "--namespace" in result.output
    both = CliRunner().invoke(app, ["consolidate", "--namespace", "a", "--all"])
    assert both.exit_code == 1 and "not both" in both.output


def test_a_parked_measurement_comes_back_when_an_attempt_starts_from_it(
    knowledge: KnowledgeService, store: GraphStore, namespace: str
) -> None:
    """The loop continues from its kept child by id: once explored, the child is found again."""
    [first] = knowledge.record_attempts(namespace, [attempt("run-9:0", "K", SIG_A, "unroll", 2.0)])
    assert consolidate(store, namespace).parked == 1
    child = first.child_measurement_id
    assert count(store, "MATCH (m:Measurement {namespace: $ns}) WHERE m.signature IS NULL "
                        "AND m.parked_signature IS NOT NULL RETURN count(m)", namespace) == 1  # fmt: skip
    step = factories.attempt(
        "run-9:1",
        transform="tile",
        speedup=1.3,
        parent_source="x",
        child_source="void kernel(void) { /* K tile */ }",
    )
    step.pop("parent"), step.pop("parent_measurement")
    knowledge.record_attempts(namespace, [{**step, "parent_measurement_id": child}])
    assert count(store, "MATCH (m:Measurement {namespace: $ns}) WHERE m.signature IS NOT NULL AND m.explored "
                        "AND m.parked_signature IS NULL RETURN count(m)", namespace) == 2  # fmt: skip
    response = knowledge.retrieve(
        [namespace], {"target": "cpu-test", "signature": SIG_A, "k": 10, "limit": 20}
    )
    assert child in response.neighbour_ids and {t.transform for t in response.transforms} == {
        "unroll",
        "tile",
    }


def _source_vectors(store: GraphStore, namespace: str) -> dict[str, dict[str, Any]]:
    prop = source_property(factories.SOURCE)
    records = store.driver.execute_query(
        f"MATCH (m:Measurement {{namespace: $ns}}) RETURN m.measurement_id AS id, m.{prop} AS vector, "
        "m.signature AS signature, coalesce(m.signature, m.merged_signature, m.parked_signature) AS kept, "
        "m.signature_dims AS dims, m.explored AS explored, m.merged_into AS merged_into",
        ns=namespace, database_=store.database,
    ).records  # fmt: skip
    return {r["id"]: dict(r) for r in records}


def test_merged_and_parked_measurements_leave_the_per_source_index(
    knowledge: KnowledgeService, store: GraphStore, namespace: str
) -> None:
    """Signature version 2 indexes each source's complete measurements on m.signature_<source>: merging
    and parking take that out with the signature, so the index holds exactly the states neighbour search
    may return; exploring a parked child puts its per-source vector back, and a later re-signing keeps
    merged and parked measurements out."""
    from kernelgraph.service.migrate import resign_measurements

    [*_, last] = knowledge.record_attempts(namespace, seeded())
    consolidate(store, namespace)
    stored = _source_vectors(store, namespace)
    states = {i for i, m in stored.items() if m["explored"] and m["merged_into"] is None}
    assert len(states) == 4  # A, A at another size, B, C (A's and B's re-measurements merged)
    for i, m in stored.items():
        assert (m["vector"] is not None) == (i in states), i
        if i in states:
            scales = source_scales(factories.SOURCE)  # the index holds scaled values (signature 4)
            assert m["vector"] == pytest.approx([m["signature"][d] / scales[d] for d in m["dims"]])
        else:
            assert m["signature"] is None and m["kept"] is not None and m["dims"]
    assert factories.in_source_index(store, namespace, states) == states

    # An attempt from a parked child (the loop continuing from its kept child) restores it.
    child = last.child_measurement_id
    assert child is not None and child not in states
    step = factories.attempt("run-8:1", transform="tile", speedup=1.2, parent_source="x",
                             child_source="void kernel(void) { /* A far tile */ }")  # fmt: skip
    step.pop("parent"), step.pop("parent_measurement")
    [continued] = knowledge.record_attempts(namespace, [{**step, "parent_measurement_id": child}])
    restored = _source_vectors(store, namespace)[child]
    scales = source_scales(factories.SOURCE)
    assert restored["explored"]
    assert restored["vector"] == pytest.approx(
        [restored["signature"][d] / scales[d] for d in restored["dims"]]
    )
    # Its own new child is stored out of the index (no attempt started from it); consolidation parks it.
    fresh = {continued.child_measurement_id}
    assert factories.in_source_index(store, namespace, states | {child}) == states | {child}
    assert _source_vectors(store, namespace)[continued.child_measurement_id]["vector"] is None
    assert consolidate(store, namespace).parked == 1

    # A later signature version re-signs every measurement: merged and parked ones stay out of the index.
    # Counters that measure every cpu_cachegrind dimension, so each re-signed state is complete again.
    counters = {"time_ns": 1e6, "flops": 3.3e7, "bytes": 1.2e6, "instructions": 5e7, "d1_miss_rate": 0.31,
                "ll_miss_rate": 0.02, "ll_miss_bytes": 2.4e6, "cpu_utilization": 0.5, "threads": 1}  # fmt: skip
    store.driver.execute_query(
        "MATCH (m:Measurement {namespace: $ns}) SET m.signature_version = 1, m.counters_json = $counters",
        ns=namespace, counters=json.dumps(counters), database_=store.database,
    )  # fmt: skip
    assert resign_measurements(store) >= len(stored)
    resigned = _source_vectors(store, namespace)
    explored = states | {child}
    assert set(resigned) == set(stored) | fresh
    for i, m in resigned.items():
        assert m["kept"] is not None and len(m["dims"]) == len(source_dimensions(factories.SOURCE)), i
        assert (m["signature"] is not None) == (i in explored), i
        assert (m["vector"] is not None) == (i in explored), i
    assert factories.in_source_index(store, namespace, explored) == explored


# Rollups (schema 0010): a merged state is read through one aggregate per (state, transform, setting).
QUERIES = (SIG_A, SIG_B, SIG_C, SIG_FAR)


def walking(store: GraphStore) -> KnowledgeService:
    """Retrieval as it was before the rollups: a merged state walked every duplicate's aggregates."""
    return KnowledgeService(walking_store(store))


def answer(knowledge: KnowledgeService, namespace: str, signature: list[float]) -> list[dict[str, Any]]:
    """Every figure retrieval returns per transform (floats to 1e-9; id and key lists as sets)."""
    response = knowledge.retrieve(
        [namespace], {"target": "cpu-test", "signature": signature, "k": 50, "limit": 20}
    )

    def norm(value: Any) -> Any:
        if isinstance(value, float):
            return round(value, 9)
        if isinstance(value, dict):
            return {k: norm(v) for k, v in value.items()}
        if isinstance(value, list):
            return [norm(v) for v in value]
        return value

    rows = []
    for t in response.transforms:
        row = norm(t.model_dump())
        row["evidence_measurement_ids"] = sorted(row["evidence_measurement_ids"])
        row["evidence_attempt_keys"] = sorted(row["evidence_attempt_keys"])
        rows.append(row)
    return rows


def parts_disagree(store: GraphStore, namespace: str) -> list[dict[str, Any]]:
    """Rollups that are not the sum of their parts (the state's and its duplicates' StateEvidence), and
    parts without a rollup."""
    orphans = [r.data() for r in store.driver.execute_query(
        "MATCH (c:Measurement {namespace: $ns})<-[:MERGED_INTO]-() WITH DISTINCT c "
        "MATCH (m:Measurement)-[:HAS_EVIDENCE]->(e:StateEvidence) WHERE (m = c OR (m)-[:MERGED_INTO]->(c)) "
        "AND NOT EXISTS { (c)-[:HAS_ROLLUP]->(:EvidenceRollup {transform: e.transform, params_json: e.params_json}) } "
        "RETURN c.measurement_id AS state, e.transform AS transform, 'no rollup' AS stored",
        ns=namespace, database_=store.database,
    ).records]  # fmt: skip
    return orphans + [r.data() for r in store.driver.execute_query(
        "MATCH (c:Measurement {namespace: $ns})-[:HAS_ROLLUP]->(r:EvidenceRollup) "
        "MATCH (m:Measurement)-[:HAS_EVIDENCE]->(e:StateEvidence {transform: r.transform, params_json: r.params_json}) "
        "WHERE m = c OR (m)-[:MERGED_INTO]->(c) "
        "WITH r, sum(e.attempts) AS attempts, sum(e.successes) AS successes, sum(e.runtime_attempts) AS runs, "
        "     sum(e.sum_log_speedup) AS total, sum(e.sum_sq_log_speedup) AS squares, max(e.max_log_speedup) AS best, "
        "     min(e.min_log_speedup) AS worst, count(e) AS parts, "
        "     sum(CASE WHEN e.rollup_of = r.measurement_id THEN 1 ELSE 0 END) AS marked "
        "WHERE r.attempts <> attempts OR r.successes <> successes OR r.runtime_attempts <> runs "
        "   OR abs(r.sum_log_speedup - total) > 1e-9 OR abs(r.sum_sq_log_speedup - squares) > 1e-9 "
        "   OR coalesce(r.max_log_speedup, 99) <> coalesce(best, 99) OR coalesce(r.min_log_speedup, 99) <> coalesce(worst, 99) "
        "   OR marked <> parts "
        "RETURN r.measurement_id AS state, r.transform AS transform, r.attempts AS stored, attempts",
        ns=namespace, database_=store.database,
    ).records]  # fmt: skip


def with_superseded_duplicates() -> list[dict[str, Any]]:
    """seeded() plus kernel D measured twice by an evaluator before version 2 (merged and weighed down)."""
    return [*seeded(),
            attempt("old-1:0", "D", SIG_FAR, "fuse", 2.0, median=5e6, evaluator_version=None),
            attempt("old-2:0", "D", SIG_FAR, "fuse", 1.8, median=5.05e6, evaluator_version=None),
            attempt("old-2:1", "D", SIG_FAR, "tile", 1.3, median=5.05e6, evaluator_version=None)]  # fmt: skip


def test_rollups_answer_what_walking_the_duplicates_answered(
    knowledge: KnowledgeService, store: GraphStore, namespace: str
) -> None:
    """Duplicates, a contradiction and superseded-evaluator evidence: retrieval through the rollups
    returns every figure retrieval walking the duplicates returned, and keeps doing so as attempts
    arrive from a merged duplicate (an existing setting and a new one) and from the state itself."""
    knowledge.record_attempts(namespace, with_superseded_duplicates())
    old = walking(store)
    raw = {i: answer(knowledge, namespace, sig) for i, sig in enumerate(QUERIES)}
    assert raw == {i: answer(old, namespace, sig) for i, sig in enumerate(QUERIES)}  # no merges yet

    first = consolidate(store, namespace)
    assert (first.merged, first.rolled_up, first.superseded_evaluator_states) == (4, 3, 2)
    assert (
        count(store, "MATCH (:Measurement {namespace: $ns})-[:HAS_ROLLUP]->(r) RETURN count(r)", namespace)
        == 5
    )
    assert parts_disagree(store, namespace) == []
    for i, sig in enumerate(QUERIES):
        assert answer(knowledge, namespace, sig) == answer(old, namespace, sig), f"query {i}"
    disputed = answer(knowledge, namespace, SIG_B)
    assert next(t for t in disputed if t["transform"] == "vectorize")["disputed"] == 1
    assert consolidate(store, namespace).changes == 0

    # New evidence after consolidation, from each of A's three measurements (the state and its two merged
    # duplicates: an existing setting, a failure and a new transform) and from D's two (superseded).
    knowledge.record_attempts(namespace, [
        attempt("late-1:0", "A", SIG_A, "unroll", 1.7, median=1.01e6),
        attempt("late-1:1", "A", SIG_A, "fuse", 0.9, "discarded", median=1.01e6),
        attempt("late-2:0", "A", SIG_A, "unroll", None, "compile_error", median=1.00e6),
        attempt("late-3:0", "A", SIG_A, "fuse", 1.2, median=0.99e6),
        attempt("late-4:0", "D", SIG_FAR, "tile", 1.6, median=5.05e6, evaluator_version=None),
        attempt("late-5:0", "D", SIG_FAR, "unroll", 1.1, median=5e6, evaluator_version=None),
    ])  # fmt: skip
    assert (
        count(store, "MATCH (:Measurement {namespace: $ns})-[:HAS_ROLLUP]->(r) RETURN count(r)", namespace)
        == 7
    )
    assert parts_disagree(store, namespace) == []
    for i, sig in enumerate(QUERIES):
        assert answer(knowledge, namespace, sig) == answer(old, namespace, sig), (
            f"query {i} after new evidence"
        )
    fuse = next(t for t in answer(knowledge, namespace, SIG_A) if t["transform"] == "fuse")
    assert "late-1:1" in fuse["evidence_attempt_keys"]
    # The writers kept the rollups current: consolidation rolls nothing up again (it parks the new children).
    later = consolidate(store, namespace)
    assert (later.merged, later.rolled_up, later.parked) == (0, 0, 5)
    assert consolidate(store, namespace).changes == 0


def test_retrieval_reads_only_the_rollup_of_a_merged_state(
    knowledge: KnowledgeService, store: GraphStore, namespace: str
) -> None:
    """The one aggregate read per (state, transform, setting): a rollup, not the duplicates behind it."""
    knowledge.record_attempts(namespace, seeded())
    consolidate(store, namespace)
    before = answer(knowledge, namespace, SIG_A)
    # Scale the duplicates' own aggregates (never the rollup): an answer that walked them would change.
    store.driver.execute_query(
        "MATCH (d:Measurement {namespace: $ns})-[:MERGED_INTO]->() MATCH (d)-[:HAS_EVIDENCE]->(e) "
        "SET e.attempts = e.attempts * 10", ns=namespace, database_=store.database,
    )  # fmt: skip
    assert answer(knowledge, namespace, SIG_A) == before


def test_rollups_stay_the_sum_of_their_parts_beside_concurrent_writers(
    knowledge: KnowledgeService, store: GraphStore, namespace: str
) -> None:
    """Writers record attempts from merged duplicates, from their state and from new re-measurements
    while consolidation merges and rolls up repeatedly: no increment is lost or doubled."""
    knowledge.record_attempts(namespace, seeded())
    medians = (1.00e6, 1.01e6, 0.99e6)  # run-1..3's measurements of A: a state and its duplicates
    writes = [
        attempt(f"live-{i}:0", "A", SIG_A, ("unroll", "tile", "fuse", "split")[i % 4], 1.1 + (i % 5) / 10,
                median=medians[i % 3] if i % 2 else 1e6 + 1_000 * (i + 10))
        for i in range(40)
    ]  # fmt: skip
    errors: list[BaseException] = []

    def writer(part: list[dict[str, Any]]) -> None:
        try:
            for record in part:
                knowledge.record_attempts(namespace, [record])
        except BaseException as exc:  # reported by the assertion below
            errors.append(exc)

    threads = [threading.Thread(target=writer, args=(writes[i::2],)) for i in range(2)]
    for thread in threads:
        thread.start()
    runs = 0
    while any(t.is_alive() for t in threads) or runs < 2:
        consolidate(store, namespace)
        runs += 1
    for thread in threads:
        thread.join()
    assert not errors
    assert parts_disagree(store, namespace) == []
    consolidate(store, namespace)
    assert consolidate(store, namespace).changes == 0
    assert parts_disagree(store, namespace) == []
    total = len(seeded()) + len(writes)
    response = knowledge.retrieve(
        [namespace], {"target": "cpu-test", "signature": SIG_A, "k": 50, "limit": 20}
    )
    assert sum(t.attempts for t in response.transforms) == total
    # Attempts here tie on speedup: which of them is the best example was arbitrary before too.
    assert untied(answer(knowledge, namespace, SIG_A)) == untied(answer(walking(store), namespace, SIG_A))


def untied(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{**row, "best_example": {**row["best_example"], "attempt_key": None}} for row in rows]
