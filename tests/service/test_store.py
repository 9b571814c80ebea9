"""The typed store against the real Neo4j: migrations, round trips, idempotency, bad input."""

from __future__ import annotations

import copy
import math
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest

from kernelgraph.client.errors import InvalidInput
from kernelgraph.client.signature import SIGNATURE_DIM
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
    assert set(by_name) >= {"measurement_signature", "kernel_source_embedding"}
    config = by_name["measurement_signature"]["options"]["indexConfig"]
    assert config["vector.dimensions"] == SIGNATURE_DIM
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
    }  # fmt: skip


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


BAD_INPUTS = [
    ("child_measurement.median_ns", math.nan, "child_measurement.median_ns"),
    ("child_measurement.median_ns", -5.0, "child_measurement.median_ns"),
    ("parent_measurement.median_ns", math.inf, "parent_measurement.median_ns"),
    ("parent_measurement.signature", [0.5] * (SIGNATURE_DIM - 1), "parent_measurement.signature"),
    ("parent_measurement.signature", [math.nan] * SIGNATURE_DIM, "parent_measurement.signature.0"),
    ("outcome", "exploded", "outcome"),
    ("parent_measurement.counter_source", "oscilloscope", "parent_measurement.counter_source"),
    ("diagnosis", "x" * 9000, "diagnosis"),
    ("child.source", "", "child.source"),
    ("transform.name", "unroll'}) DETACH DELETE n //", "transform.name"),
    ("target", "cpu`) MATCH (n) DETACH DELETE n //", "target"),
    ("attempt_key", KeyError, "attempt_key"),
    ("target", "no-such-target", "target"),
    ("speedup", 0.0, "speedup"),
]


@pytest.mark.parametrize(
    ("path", "value", "field"), BAD_INPUTS, ids=[f"{p}={str(v)[:20]}" for p, v, _ in BAD_INPUTS]
)
def test_bad_input_names_the_field_and_writes_nothing(
    knowledge: KnowledgeService, store: GraphStore, namespace: str, path: str, value: Any, field: str
) -> None:
    before = counts(store, namespace)
    with pytest.raises(InvalidInput) as caught:
        knowledge.record_attempts(namespace, [_with(path, value)])
    assert caught.value.field == field
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

    from kernelgraph.client.errors import Retryable
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
