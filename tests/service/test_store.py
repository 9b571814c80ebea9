"""The typed store against the real Neo4j: migrations, round trips, idempotency, bad input."""

from __future__ import annotations

import copy
import math
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest

from kernelgraph.core.errors import InvalidInput, NotFound
from kernelgraph.core.models import KernelVariant, Measurement, validate
from kernelgraph.core.signature import SIGNATURE_DIM, CounterSource, source_dimensions, source_index
from kernelgraph.service import migrate
from kernelgraph.service.knowledge import KnowledgeService
from kernelgraph.service.store import GraphStore
from tests import factories

pytestmark = pytest.mark.neo4j


@pytest.fixture
def knowledge(store: GraphStore, namespace: str) -> KnowledgeService:
    service = KnowledgeService(store)
    service.upsert_targets(namespace, [factories.target()])
    return service


def counts(store: GraphStore, namespace: str) -> tuple[int, int]:
    nodes = store.driver.execute_query(
        "MATCH (n {namespace: $ns}) RETURN count(n) AS c", ns=namespace, database_=store.database
    ).records[0]["c"]
    rels = store.driver.execute_query(
        "MATCH (n {namespace: $ns})-[r]-() RETURN count(DISTINCT r) AS c",
        ns=namespace,
        database_=store.database,
    ).records[0]["c"]
    return nodes, rels


def test_migrations_apply_twice_and_record_each_version_once(store: GraphStore) -> None:
    assert migrate.apply(store) == []  # the session fixture applied them already
    states = migrate.status(store)
    assert states and all(s.applied for s in states)
    versions = store.driver.execute_query(
        "MATCH (m:SchemaMigration) RETURN m.version AS v, count(*) AS c", database_=store.database
    ).records
    assert all(r["c"] == 1 for r in versions)
    assert {r["v"] for r in versions} == {s.version for s in states}


def test_constraints_cover_every_label_and_both_vector_indexes_exist(store: GraphStore) -> None:
    constraints = store.driver.execute_query(
        "SHOW CONSTRAINTS YIELD labelsOrTypes, type", database_=store.database
    )
    unique_labels = {r["labelsOrTypes"][0] for r in constraints.records if r["type"] == "UNIQUENESS"}
    assert {
        "HardwareTarget",
        "Kernel",
        "AccessPattern",
        "Transform",
        "Measurement",
        "Attempt",
    } <= unique_labels
    vectors = store.driver.execute_query(
        "SHOW VECTOR INDEXES YIELD name, state, options", database_=store.database
    ).records
    by_name = {r["name"]: r for r in vectors}
    # Signature version 2: one index per counter source over its own dimensions; no imputed 12-d index.
    assert "measurement_signature" not in by_name and "kernel_source_embedding" in by_name
    for source in CounterSource:
        config = by_name[source_index(source)]["options"]["indexConfig"]
        assert config["vector.dimensions"] == len(source_dimensions(source))
    assert all(r["state"] == "ONLINE" for r in vectors)


def test_attempt_round_trip_with_lineage(
    knowledge: KnowledgeService, store: GraphStore, namespace: str
) -> None:
    first = factories.attempt("run-1:0", child_source="void kernel(void) { /* v1 */ }")
    second = factories.attempt(
        "run-1:1", transform="tile", parent_source=first["child"]["source"],
        child_source="void kernel(void) { /* v2 */ }",
    )  # fmt: skip
    results = knowledge.record_attempts(namespace, [first, second])
    assert [r.created for r in results] == [True, True]
    row = store.driver.execute_query(
        """MATCH (a:Attempt {namespace: $ns, attempt_key: 'run-1:1'})-[:APPLIED]->(t:Transform),
                 (a)-[:FROM]->(p:Kernel), (a)-[:PRODUCED]->(c:Kernel), (a)-[:ON_TARGET]->(h:HardwareTarget),
                 (a)-[:FROM_STATE]->(pm:Measurement)-[:OF]->(p), (a)-[:RESULTED_IN]->(cm:Measurement)-[:OF]->(c),
                 (c)-[:EXHIBITS]->(ap:AccessPattern)
           RETURN t.name AS t, h.name AS h, ap.name AS ap, cm.median_ns AS child_ns, a.outcome AS outcome,
                  a.speedup AS speedup, pm.signature AS signature""",
        ns=namespace, database_=store.database,
    ).records  # fmt: skip
    assert len(row) == 1
    assert (row[0]["t"], row[0]["h"], row[0]["ap"], row[0]["outcome"]) == (
        "tile",
        "cpu-test",
        "dense-matmul",
        "kept",
    )
    assert math.isclose(row[0]["child_ns"], 1e6 / 1.5)
    assert len(row[0]["signature"]) == SIGNATURE_DIM
    lineage = store.driver.execute_query(
        "MATCH path = (c:Kernel {namespace: $ns, kernel_id: $kid})-[:DERIVED_FROM*]->(root:Kernel) "
        "RETURN length(path) AS depth ORDER BY depth DESC LIMIT 1",
        ns=namespace, kid=results[1].child_kernel_id, database_=store.database,
    ).records  # fmt: skip
    assert lineage[0]["depth"] == 2


def test_replay_returns_stored_result_and_writes_nothing(
    knowledge: KnowledgeService, store: GraphStore, namespace: str
) -> None:
    record = factories.attempt()
    assert knowledge.record_attempts(namespace, [record])[0].created
    before = counts(store, namespace)
    replay = knowledge.record_attempts(namespace, [record])[0]
    assert not replay.created
    assert counts(store, namespace) == before


def test_sixteen_threads_recording_the_same_attempt_leave_one(
    knowledge: KnowledgeService, store: GraphStore, namespace: str
) -> None:
    record = factories.attempt("race:0")
    with ThreadPoolExecutor(16) as pool:
        results = list(pool.map(lambda _: knowledge.record_attempts(namespace, [record])[0], range(16)))
    assert sum(r.created for r in results) == 1
    labels = store.driver.execute_query(
        "MATCH (n {namespace: $ns}) RETURN labels(n)[0] AS label, count(*) AS c", ns=namespace,
        database_=store.database,
    ).records  # fmt: skip
    by_label = {r["label"]: r["c"] for r in labels}
    assert by_label == {
        "HardwareTarget": 1, "Attempt": 1, "Kernel": 2, "Transform": 1, "AccessPattern": 1, "Measurement": 2,
        "StateEvidence": 1,
    }  # fmt: skip
    evidence = store.driver.execute_query(
        "MATCH (:Measurement {namespace: $ns})-[:HAS_EVIDENCE]->(e:StateEvidence) RETURN e.attempts AS n",
        ns=namespace, database_=store.database,
    ).records  # fmt: skip
    assert [r["n"] for r in evidence] == [1]


def _with(path: str, value: Any) -> dict[str, Any]:
    record = copy.deepcopy(factories.attempt("bad:0"))
    *parents, leaf = path.split(".")
    node = record
    for part in parents:
        node = node[part]
    if value is KeyError:
        del node[leaf]
    else:
        node[leaf] = value
    return record


def graph_shape(store: GraphStore, namespace: str) -> list[tuple[str, str, str, int]]:
    """Every (start label, relationship, end label, count) in the namespace: what must not change."""
    rows = store.driver.execute_query(
        "MATCH (a {namespace: $ns})-[r]->(b) RETURN labels(a)[0] AS a, type(r) AS r, labels(b)[0] AS b, "
        "count(*) AS n ORDER BY a, r, b",
        ns=namespace, database_=store.database,
    ).records  # fmt: skip
    return [(row["a"], row["r"], row["b"], row["n"]) for row in rows]


def _by_reference(record: dict[str, Any], measurement_id: str) -> dict[str, Any]:
    """`record` with its parent named by a recorded measurement's id instead of sent in full."""
    trimmed = {k: v for k, v in record.items() if k not in ("parent", "parent_measurement")}
    return {**trimmed, "parent_measurement_id": measurement_id}


def test_a_parent_referenced_by_measurement_id_stores_what_the_full_parent_stores(
    knowledge: KnowledgeService, store: GraphStore, namespace: str
) -> None:
    other_namespace = f"{namespace}-in-full"
    attempts = [
        factories.attempt("run-1:0", child_source="void kernel(void) { /* v1 */ }"),
        factories.attempt("run-1:1", transform="tile", child_source="void kernel(void) { /* v2 */ }"),
        factories.attempt("run-1:2", transform="vectorize", child_source="void kernel(void) { /* v3 */ }"),
    ]
    knowledge.upsert_targets(other_namespace, [factories.target()])
    in_full = knowledge.record_attempts(other_namespace, attempts)

    first = knowledge.record_attempts(namespace, [attempts[0]])[0]
    assert first.parent_measurement_id is not None
    second = knowledge.record_attempts(namespace, [_by_reference(attempts[1], first.parent_measurement_id)])
    knowledge.record_attempts(namespace, [_by_reference(attempts[2], first.parent_measurement_id)])

    assert graph_shape(store, namespace) == graph_shape(store, other_namespace)
    assert second[0].parent_kernel_id == in_full[1].parent_kernel_id
    assert second[0].parent_measurement_id == in_full[1].parent_measurement_id
    props = store.driver.execute_query(
        "MATCH (m:Measurement {namespace: $ns, measurement_id: $id}) RETURN properties(m) AS p",
        ns=namespace, id=first.parent_measurement_id, database_=store.database,
    ).records[0]["p"]  # fmt: skip
    assert props["median_ns"] == 1e6 and props["task"] == "matmul"  # not overwritten by the reference


def test_a_batch_may_reference_a_parent_it_records_in_full(
    knowledge: KnowledgeService, store: GraphStore, namespace: str
) -> None:
    full = factories.attempt("run-1:0")
    parent_id = KnowledgeService(store)._measurement_row(
        validate(Measurement, full["parent_measurement"]), validate(KernelVariant, full["parent"]),
        factories.target(),
    )["measurement_id"]  # fmt: skip
    # The referencing attempt sorts first, so the write meets the reference before the full parent.
    referencing = _by_reference(factories.attempt("run-0:0", transform="tile"), parent_id)
    results = knowledge.record_attempts(namespace, [full, referencing])
    assert results[1].parent_measurement_id == parent_id
    props = store.driver.execute_query(
        "MATCH (m:Measurement {namespace: $ns, measurement_id: $id}) RETURN m.median_ns AS ns",
        ns=namespace, id=parent_id, database_=store.database,
    ).records  # fmt: skip
    assert [r["ns"] for r in props] == [1e6]


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"parent_measurement_id": "f" * 32}, "parent_measurement_id"),  # recorded nowhere
        ({"target": "cpu-other"}, "parent_measurement_id"),  # measured on another target
        ({"child": factories.kernel("softmax", "void kernel(void) { }")}, "child.task"),
        ({"parent": factories.kernel("matmul", "void kernel(void) { /* another */ }")}, "parent"),
    ],
    ids=["unknown-id", "other-target", "other-task", "other-parent"],
)
def test_a_bad_parent_reference_is_rejected_naming_the_field_and_writes_nothing(
    knowledge: KnowledgeService, store: GraphStore, namespace: str, change: dict[str, Any], field: str
) -> None:
    knowledge.upsert_targets(namespace, [factories.target("cpu-other")])
    first = knowledge.record_attempts(namespace, [factories.attempt("run-1:0")])[0]
    assert first.parent_measurement_id is not None
    record = {**_by_reference(factories.attempt("run-1:1"), first.parent_measurement_id), **change}
    before = counts(store, namespace)
    unknown = change.get("parent_measurement_id") == "f" * 32  # a reference to nothing stored: 404
    with pytest.raises((InvalidInput, NotFound)) as caught:
        knowledge.record_attempts(namespace, [record])
    assert caught.value.field == field, caught.value.message
    assert isinstance(caught.value, NotFound if unknown else InvalidInput)
    with pytest.raises((InvalidInput, NotFound)) as in_batch:
        knowledge.record_attempts(
            namespace, [factories.attempt("run-2:0"), {**record, "attempt_key": "run-2:1"}]
        )
    assert in_batch.value.field == f"attempts[1].{field}"
    assert counts(store, namespace) == before


BAD_INPUTS = [
    ("child_measurement.median_ns", math.nan, "child_measurement.median_ns"),
    ("child_measurement.median_ns", -5.0, "child_measurement.median_ns"),
    ("parent_measurement.median_ns", math.inf, "parent_measurement.median_ns"),
    ("parent_measurement.signature", [0.5] * (SIGNATURE_DIM - 1), "parent_measurement.signature"),
    ("parent_measurement.signature", [math.nan] * SIGNATURE_DIM, "parent_measurement.signature.0"),
    # cpu_cachegrind measures no register pressure: a value there is refused, not silently dropped.
    ("parent_measurement.signature", [0.5] * SIGNATURE_DIM, "parent_measurement.signature"),
    ("outcome", "exploded", "outcome"),
    ("parent_measurement.counter_source", "oscilloscope", "parent_measurement.counter_source"),
    ("diagnosis", "x" * 9000, "diagnosis"),
    ("child.source", "", "child.source"),
    ("transform.name", "unroll'}) DETACH DELETE n //", "transform.name"),
    ("target", "cpu`) MATCH (n) DETACH DELETE n //", "target"),
    ("attempt_key", KeyError, "attempt_key"),
    ("target", "no-such-target", "target"),
    ("speedup", 0.0, "speedup"),
    ("parent", None, "parent"),  # neither the parent nor parent_measurement_id
    ("parent_measurement_id", "not-an-id", "parent_measurement_id"),
    ("parent_measurement_id", "0" * 32, "parent_measurement"),  # both the measurement and its id
]


@pytest.mark.parametrize(
    ("path", "value", "field"), BAD_INPUTS, ids=[f"{p}={str(v)[:20]}" for p, v, _ in BAD_INPUTS]
)
def test_bad_input_names_the_field_and_writes_nothing(
    knowledge: KnowledgeService, store: GraphStore, namespace: str, path: str, value: Any, field: str
) -> None:
    before = counts(store, namespace)
    with pytest.raises((InvalidInput, NotFound)) as caught:
        knowledge.record_attempts(namespace, [_with(path, value)])
    assert caught.value.field == field
    assert isinstance(
        caught.value, NotFound if value == "no-such-target" else InvalidInput
    )  # unknown target: 404
    assert caught.value.message
    assert counts(store, namespace) == before


@pytest.mark.parametrize(
    "server_code",
    [
        "Neo.TransientError.Transaction.DeadlockDetected",
        # The driver turns these two into ClientError (not retried); they must still be 503, not 500.
        "Neo.TransientError.Transaction.LockClientStopped",
        "Neo.TransientError.Transaction.Terminated",
    ],
)
def test_lock_contention_errors_become_retryable(server_code: str) -> None:
    from neo4j.exceptions import Neo4jError

    from kernelgraph.core.errors import Retryable
    from kernelgraph.service.store import mapped_errors

    error = Neo4jError._hydrate_neo4j(code=server_code, message="lock contention")
    with pytest.raises(Retryable), mapped_errors():
        raise error


def test_a_real_client_error_is_not_disguised_as_retryable() -> None:
    from neo4j.exceptions import ClientError, Neo4jError

    from kernelgraph.service.store import mapped_errors

    error = Neo4jError._hydrate_neo4j(code="Neo.ClientError.Statement.SyntaxError", message="bad")
    with pytest.raises(ClientError), mapped_errors():
        raise error


def test_a_write_stuck_behind_another_transactions_lock_ends_retryable_and_its_retry_stores_once(
    knowledge: KnowledgeService, store: GraphStore, namespace: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A request's write waits for a lock no longer than its timeout: Neo4j ends it and the caller gets
    Retryable (503 with Retry-After), not an answer minutes later; nothing of it is half-written, and
    once the lock is free the same attempt key stores the attempt exactly once."""
    import time

    from kernelgraph.core.errors import Retryable

    monkeypatch.setattr("kernelgraph.service.recording.REQUEST_WRITE_TIMEOUT_S", 1.0)
    record = factories.attempt("stuck:0", parent_source="/* stuck */")
    with store.driver.session(database=store.database) as session:
        holder = session.begin_transaction(timeout=20)  # so that a regression fails here instead of hanging
        # Another transaction holds the target node's write lock (each attempt links to its target).
        holder.run(
            "MATCH (h:HardwareTarget {namespace: $ns, name: 'cpu-test'}) SET h.held = true", ns=namespace
        ).consume()
        started = time.monotonic()
        try:
            with pytest.raises(Retryable):
                knowledge.record_attempts(namespace, [record])
            waited = time.monotonic() - started
        finally:
            holder.rollback()
    assert waited < 15, f"the write waited {waited:.1f} s for the lock"
    assert counts(store, namespace)[0] == 1  # the target only: nothing of the attempt was written
    [result] = knowledge.record_attempts(namespace, [record])
    assert result.created
    assert knowledge.record_attempts(namespace, [record])[0].created is False
