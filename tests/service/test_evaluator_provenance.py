"""Evaluator 2 stores provenance on measurements and two new outcomes; a graph written before still
answers retrieval and lineage after `schema apply`."""

from __future__ import annotations

import pytest

from kernelgraph.core.signature import SIGNATURE_DIM
from kernelgraph.service import migrate
from kernelgraph.service.knowledge import KnowledgeService
from kernelgraph.service.store import GraphStore
from tests import factories

pytestmark = pytest.mark.neo4j

PROVENANCE_MIGRATION = 5


def _old_graph(knowledge: KnowledgeService, store: GraphStore, namespace: str) -> str:
    """Two attempts in the shape evaluator 1 wrote: measurements without provenance properties."""
    first = factories.attempt("old-run:0", child_source="void kernel(void) { /* old v1 */ }")
    second = factories.attempt(
        "old-run:1", transform="tile", parent_source=first["child"]["source"],
        child_source="void kernel(void) { /* old v2 */ }",
    )  # fmt: skip
    results = knowledge.record_attempts(namespace, [first, second])
    store.driver.execute_query(
        "MATCH (m:Measurement {namespace: $ns}) REMOVE m.evaluator_version, m.sandboxed",
        ns=namespace, database_=store.database,
    )  # fmt: skip
    return results[1].child_kernel_id


def test_old_graph_answers_retrieve_and_lineage_after_schema_apply(store: GraphStore, namespace: str) -> None:
    knowledge = KnowledgeService(store)
    knowledge.upsert_targets(namespace, [factories.target()])
    old_child = _old_graph(knowledge, store, namespace)
    # Undo migration 0005 as if this graph predated it, then apply the schema as an upgrade does.
    store.driver.execute_query("DROP INDEX measurement_evaluator IF EXISTS", database_=store.database)
    store.driver.execute_query(
        "MATCH (m:SchemaMigration {version: $v}) DELETE m", v=PROVENANCE_MIGRATION, database_=store.database
    )
    applied = migrate.apply(store)
    assert PROVENANCE_MIGRATION in [m.version for m in applied]
    indexes = store.driver.execute_query("SHOW INDEXES YIELD name", database_=store.database).records
    assert "measurement_evaluator" in {r["name"] for r in indexes}

    # New attempts beside the old ones: one with provenance, one implausible (no child measurement).
    new = factories.attempt(
        "new-run:0", parent_source="void kernel(void) { /* old v2 */ }",
        child_source="void kernel(void) { /* new */ }",
        child_measurement=factories.measurement(5e5, evaluator_version=2, sandboxed=True, parent_median_ns=7.5e5),
    )  # fmt: skip
    implausible = factories.attempt(
        "new-run:1", transform="vectorize", parent_source="void kernel(void) { /* old v2 */ }",
        child_source="void kernel(void) { /* too fast */ }", outcome="implausible", speedup=None,
    )  # fmt: skip
    knowledge.record_attempts(namespace, [new, implausible])

    response = knowledge.retrieve(
        [namespace], {"target": "cpu-test", "signature": [0.5] * SIGNATURE_DIM, "k": 20}
    )
    by_name = {t.transform: t for t in response.transforms}
    assert {"unroll", "tile"} <= set(by_name), "old attempts must still be retrieved"
    if "vectorize" in by_name:  # an implausible attempt is evidence against, never a success
        assert by_name["vectorize"].successes == 0
    steps = knowledge.lineage([namespace], old_child)
    assert [s.transform for s in steps if s.transform] == ["tile", "unroll"]

    rows = store.driver.execute_query(
        """MATCH (m:Measurement {namespace: $ns})
           RETURN m.evaluator_version AS version, m.sandboxed AS sandboxed ORDER BY version""",
        ns=namespace, database_=store.database,
    ).records  # fmt: skip
    versions = [(r["version"], r["sandboxed"]) for r in rows]
    assert (2, True) in versions and (None, None) in versions
