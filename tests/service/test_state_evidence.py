"""The per-state aggregates (StateEvidence, schema 0006) count exactly the attempts stored behind them,
under replays, batches and concurrent writers, and the migration's backfill rebuilds the same ones."""

from __future__ import annotations

import math
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest

from kernelgraph.service.knowledge import KnowledgeService
from kernelgraph.service.queries import migrations
from kernelgraph.service.store import GraphStore
from tests import factories

pytestmark = pytest.mark.neo4j

# What every aggregate must hold, recomputed from the attempts behind it.
FROM_ATTEMPTS = """
MATCH (m:Measurement {namespace: $ns})<-[:FROM_STATE]-(a:Attempt)
WITH m, a.transform AS transform, a.params_json AS params, collect(a) AS attempts
WITH m, transform, params, attempts, [x IN attempts WHERE x.log_speedup IS NOT NULL] AS timed
RETURN m.measurement_id AS measurement_id, transform, params, size(attempts) AS attempts,
       size([x IN attempts WHERE x.outcome = 'kept']) AS successes, size(timed) AS runtime_attempts,
       reduce(s = 0.0, x IN timed | s + x.log_speedup) AS sum_log_speedup,
       reduce(s = 0.0, x IN timed | s + x.log_speedup ^ 2) AS sum_sq_log_speedup,
       [x IN attempts | x.attempt_key] AS keys
ORDER BY measurement_id, transform, params
"""
STORED = """
MATCH (m:Measurement {namespace: $ns})-[:HAS_EVIDENCE]->(e:StateEvidence)
RETURN e.measurement_id AS measurement_id, e.transform AS transform, e.params_json AS params,
       e.attempts AS attempts, e.successes AS successes, e.runtime_attempts AS runtime_attempts,
       e.sum_log_speedup AS sum_log_speedup, e.sum_sq_log_speedup AS sum_sq_log_speedup,
       e.attempt_keys AS keys
ORDER BY measurement_id, transform, params
"""


def rows(store: GraphStore, cypher: str, namespace: str) -> list[dict[str, Any]]:
    records = store.driver.execute_query(cypher, ns=namespace, database_=store.database).records
    return [{**r.data(), "keys": sorted(r["keys"])} for r in records]


def assert_consistent(store: GraphStore, namespace: str) -> list[dict[str, Any]]:
    expected, stored = rows(store, FROM_ATTEMPTS, namespace), rows(store, STORED, namespace)
    assert len(stored) == len(expected)
    for want, got in zip(expected, stored, strict=True):
        for key, value in want.items():
            if isinstance(value, float):
                assert math.isclose(got[key], value, abs_tol=1e-9), (key, got, want)
            else:
                assert got[key] == value, (key, got, want)
    return stored


@pytest.fixture
def knowledge(store: GraphStore, namespace: str) -> KnowledgeService:
    service = KnowledgeService(store)
    service.upsert_targets(namespace, [factories.target()])
    return service


def _from_one_state(key: str, speedup: float | None, outcome: str) -> dict[str, Any]:
    return factories.attempt(key, speedup=speedup, outcome=outcome,
                             child_source=f"void kernel(void) {{ /* {key} */ }}")  # fmt: skip


def test_one_batch_aggregates_every_figure_and_the_best_example(
    knowledge: KnowledgeService, store: GraphStore, namespace: str
) -> None:
    attempts = [
        _from_one_state("agg:0", 1.5, "kept"),
        _from_one_state("agg:1", 3.0, "kept"),
        _from_one_state("agg:2", None, "compile_error"),
        _from_one_state("agg:3", 0.8, "discarded"),
    ]
    knowledge.record_attempts(namespace, attempts)
    knowledge.record_attempts(namespace, attempts)  # a replay changes no aggregate
    [stored] = assert_consistent(store, namespace)
    assert (stored["attempts"], stored["successes"], stored["runtime_attempts"]) == (4, 2, 3)
    [evidence] = store.driver.execute_query(
        "MATCH (e:StateEvidence {namespace: $ns}) RETURN e", ns=namespace, database_=store.database
    ).records
    e = evidence["e"]
    assert (e["best_attempt_key"], e["best_speedup"], e["best_outcome"]) == ("agg:1", 3.0, "kept")
    assert math.isclose(e["max_log_speedup"], math.log(3.0))
    assert math.isclose(e["min_log_speedup"], math.log(0.8))


def test_failures_only_keep_the_first_attempt_as_best_example(
    knowledge: KnowledgeService, store: GraphStore, namespace: str
) -> None:
    knowledge.record_attempts(namespace, [_from_one_state("fail:0", None, "incorrect")])
    knowledge.record_attempts(namespace, [_from_one_state("fail:1", None, "crashed")])
    [stored] = assert_consistent(store, namespace)
    assert stored["runtime_attempts"] == 0
    e = store.driver.execute_query(
        "MATCH (e:StateEvidence {namespace: $ns}) RETURN e", ns=namespace, database_=store.database
    ).records[0]["e"]
    assert (e["best_attempt_key"], e.get("best_speedup"), e.get("max_log_speedup")) == ("fail:0", None, None)


def test_concurrent_writers_lose_no_increment(
    knowledge: KnowledgeService, store: GraphStore, namespace: str
) -> None:
    """Twenty-four single attempts from one state, with one transform and setting, from 8 threads."""
    attempts = [_from_one_state(f"race:{i}", 1.0 + (i + 1) / 10, "kept") for i in range(24)]
    with ThreadPoolExecutor(8) as pool:
        list(pool.map(lambda a: knowledge.record_attempts(namespace, [a]), attempts))
    [stored] = assert_consistent(store, namespace)
    assert stored["attempts"] == 24


def test_the_migration_backfill_rebuilds_the_same_aggregates(
    knowledge: KnowledgeService, store: GraphStore, namespace: str
) -> None:
    attempts = [factories.attempt(f"bf:{i}", transform=("unroll", "tile")[(i // 4) % 2], speedup=(None, 1.2, 0.7)[i % 3],
                                  outcome=("crashed", "kept", "discarded")[i % 3],
                                  parent_source=f"void kernel(void) {{ /* state {i % 4} */ }}",
                                  child_source=f"void kernel(void) {{ /* child {i} */ }}")
                for i in range(12)]  # fmt: skip
    knowledge.record_attempts(namespace, attempts)
    before = assert_consistent(store, namespace)
    assert len(before) == 8
    store.driver.execute_query(
        "MATCH (e:StateEvidence {namespace: $ns}) DETACH DELETE e", ns=namespace, database_=store.database
    )
    [migration] = [m for m in migrations() if m.name.startswith("0006_")]
    backfill = migration.statements()[-1]
    for _ in range(2):  # a second run changes nothing
        with store.driver.session(database=store.database) as session:
            session.run(backfill).consume()
        assert assert_consistent(store, namespace) == before
