"""Schema 0012: only explored states (an attempt started from them) are in the per-source vector indexes.
A graph written before, whose children carried their per-source vectors, is upgraded by `schema apply`
and answers retrieval as before."""

from __future__ import annotations

import pytest

from kernelgraph.core.signature import (
    SOURCE_SCALES_PARAM,
    SOURCE_UNITS_PARAM,
    source_dimensions,
    source_property,
)
from kernelgraph.service import migrate
from kernelgraph.service.knowledge import KnowledgeService
from kernelgraph.service.store import GraphStore
from tests import factories

pytestmark = pytest.mark.neo4j

MIGRATION = 12


def _vectors(store: GraphStore, namespace: str) -> dict[str, tuple[bool, bool]]:
    """measurement id -> (explored, carries its per-source vector)."""
    prop = source_property(factories.SOURCE)
    records = store.driver.execute_query(
        f"MATCH (m:Measurement {{namespace: $ns}}) RETURN m.measurement_id AS id, m.explored IS NOT NULL AS "
        f"explored, m.{prop} IS NOT NULL AS indexed",
        ns=namespace, database_=store.database,
    ).records  # fmt: skip
    return {r["id"]: (r["explored"], r["indexed"]) for r in records}


def test_children_enter_the_index_when_explored_and_the_upgrade_takes_old_ones_out(
    store: GraphStore, namespace: str
) -> None:
    knowledge = KnowledgeService(store)
    knowledge.upsert_targets(namespace, [factories.target()])
    first, second = knowledge.record_attempts(namespace, [
        factories.attempt("run:0", child_source="void kernel(void) { /* v1 */ }"),
        factories.attempt("run:1", transform="tile", child_source="void kernel(void) { /* v2 */ }"),
    ])  # fmt: skip
    stored = _vectors(store, namespace)
    assert stored and all(explored == indexed for explored, indexed in stored.values())
    explored = {i for i, (e, _) in stored.items() if e}
    assert (
        first.child_measurement_id not in explored
        and factories.in_source_index(store, namespace, explored) == explored
    )

    # The loop goes on from a kept child: it becomes a state, and only now enters the index.
    step = factories.attempt("run:2", transform="vectorize", child_source="void kernel(void) { /* v3 */ }")
    step.pop("parent"), step.pop("parent_measurement")
    knowledge.record_attempts(namespace, [{**step, "parent_measurement_id": first.child_measurement_id}])
    assert _vectors(store, namespace)[first.child_measurement_id] == (True, True)
    explored.add(first.child_measurement_id)
    assert factories.in_source_index(store, namespace, explored) == explored
    request = {"target": "cpu-test", "signature": factories.masked(0.5), "k": 10}
    before = knowledge.retrieve([namespace], request)

    # The graph as the release before wrote it: every complete measurement carried its vector.
    store.driver.execute_query(
        "MATCH (m:Measurement {namespace: $ns}) WHERE m.signature_complete "
        "SET m[$prop] = [i IN m.signature_dims | m.signature[i]]",
        ns=namespace, prop=source_property(factories.SOURCE), database_=store.database,
    )  # fmt: skip
    everything = set(_vectors(store, namespace))
    assert second.child_measurement_id in everything - explored
    assert factories.in_source_index(store, namespace, everything) == everything
    store.driver.execute_query(
        "MATCH (m:SchemaMigration {version: $v}) DELETE m", v=MIGRATION, database_=store.database
    )
    assert MIGRATION in [m.version for m in migrate.apply(store)]
    assert all(explored == indexed for explored, indexed in _vectors(store, namespace).values())
    assert factories.in_source_index(store, namespace, explored) == explored
    after = knowledge.retrieve([namespace], request)
    assert after.neighbour_ids == before.neighbour_ids and after.transforms == before.transforms
    assert migrate.apply(store) == []


def _seek_rows(store: GraphStore, name: str, params: dict[str, object]) -> int:
    """Rows the index seek of a named query produced (PROFILE), whichever operator seeks."""
    query = store._query(name, params)
    with store.driver.session(database=store.database) as session:
        profile = session.run("PROFILE " + query.cypher, params).consume().profile
    assert profile is not None
    seeks, stack = [], [profile]
    while stack:
        operator = stack.pop()
        if "IndexSeek" in operator["operatorType"]:
            seeks.append(operator["rows"])
        stack += operator.get("children", [])
    assert len(seeks) == 1, seeks
    return int(seeks[0])


def test_neighbour_queries_read_states_not_children(store: GraphStore, namespace: str) -> None:
    """Schema 0013: the (namespace, explored[, signature_complete]) indexes hold states only, so exact
    scoring and counting read the namespace's states, not the children every attempt measured, and the
    exact scoring of a large namespace's incomplete states reads only those."""
    knowledge = KnowledgeService(store)
    knowledge.upsert_targets(namespace, [factories.target()])
    knowledge.record_attempts(namespace, [
        factories.attempt(f"fan:{i}", child_source=f"void kernel(void) {{ /* child {i} */ }}") for i in range(12)
    ])  # fmt: skip
    # A second state whose signature misses a dimension its source measures: incomplete.
    gap = factories.measurement()
    gap["signature"][source_dimensions(factories.SOURCE)[0]] = None
    knowledge.record_attempts(namespace, [factories.attempt(
        "gap:0", parent_source="void kernel(void) { /* gap */ }", child_source="void kernel(void) { /* gap child */ }",
        parent_measurement=gap,
    )])  # fmt: skip
    stored = _vectors(store, namespace)
    assert len(stored) == 15 and sum(explored for explored, _ in stored.values()) == 2
    signature = factories.masked(0.5)
    measured = [i for i, v in enumerate(signature) if v is not None]
    exact = {"signature": [v or 0.0 for v in signature], "measured": measured,
             "min_shared": 3, "k": 10, "namespaces": [namespace], "exclude_tasks": [], "complete": [True, False],
             "transforms": None, "verified_only": False, "source_scales": SOURCE_SCALES_PARAM,
             "source_units": SOURCE_UNITS_PARAM}  # fmt: skip
    assert _seek_rows(store, "nearest_states_by_signature_exact", exact) == 2
    # A large namespace scores only its incomplete states exactly: it reads those, not every state.
    assert _seek_rows(store, "nearest_states_by_signature_exact", {**exact, "complete": [False]}) == 1
    assert _seek_rows(store, "count_explored_states", {"namespaces": [namespace], "limit": 1001}) == 2
