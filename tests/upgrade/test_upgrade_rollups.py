"""A graph consolidated by the code before schema 0010 (merged states read by walking every duplicate's
aggregates) answers the same after `schema apply` rolls its merged states up, and keeps answering the
same as attempts arrive from merged duplicates.

The code before 0010 merged, weighed, flagged and parked exactly as today's consolidation does; it did
not roll up. So the graph it wrote is today's consolidation of the release's graph without the rollups,
and its answers are those of its retrieval query (kept as tests/fixtures/cypher/aggregate_transforms_0009.cypher).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from kernelgraph.service import migrate
from kernelgraph.service.embeddings import MiniLMEmbedder
from kernelgraph.service.knowledge import KnowledgeService
from kernelgraph.service.recorder import Recorder
from kernelgraph.service.retrieval import LEGACY_KEY
from kernelgraph.service.store import GraphStore
from tests import factories
from tests.upgrade.questions import older_signature
from tests.upgrade.release_server import BEFORE_EVIDENCE_KEYS, GRAPHS, release_graph
from tests.walking_oracle import walking_store

RELEASE = BEFORE_EVIDENCE_KEYS
# What consolidation before schema 0010 did not write: the rollups and the marks that tie them to parts.
STRIP_ROLLUPS = [
    "MATCH (r:EvidenceRollup) DETACH DELETE r",
    "MATCH (m:Measurement) WHERE m.rollup_into IS NOT NULL OR m.evidence_at IS NOT NULL "
    "REMOVE m.rollup_into, m.evidence_at",
    "MATCH (e:StateEvidence) WHERE e.rollup_of IS NOT NULL REMOVE e.rollup_of",
    "MATCH (s:SchemaMigration {version: 10}) DETACH DELETE s",
    "DROP CONSTRAINT evidence_rollup_key IF EXISTS",
]

pytestmark = [pytest.mark.neo4j, pytest.mark.slow]


def _answer(knowledge: KnowledgeService, namespace: str, request: dict[str, Any]) -> list[dict[str, Any]]:
    """Every figure of a retrieval (floats to 1e-9). Evidence keys are compared where they are all
    returned (50 at most) and best examples by speedup: which of two equal attempts comes first in a
    list or is the example was arbitrary before too."""
    rows = []
    for t in knowledge.retrieve([namespace], request).transforms:
        row = json.loads(json.dumps(t.model_dump()), parse_float=lambda x: round(float(x), 9))
        row["evidence_measurement_ids"] = sorted(row["evidence_measurement_ids"])
        row["evidence_attempt_keys"] = (
            sorted(row["evidence_attempt_keys"]) if t.attempts <= 50 else len(row["evidence_attempt_keys"])
        )
        row["best_example"] = {**row["best_example"], "attempt_key": None}
        # Who vouches (schema 0015) is not the oracle's to know: it reads aggregates, not recorders.
        del row["verified_attempts"], row["keys"]
        rows.append(row)
    return rows


def _remeasure(knowledge: KnowledgeService, store: GraphStore, spaces: list[str]) -> None:
    """The release's loop re-measured few baselines; continue it the way the optimize loop does: a few
    of its explored states measured twice more (timings 0.3% apart, the same counters), with one attempt
    each, so that consolidation has re-measurements to merge."""
    _, rows = store.run_text(
        "MATCH (a:Attempt)-[:FROM_STATE]->(m:Measurement)-[:OF]->(k:Kernel) "
        "WHERE m.namespace IN $spaces AND m.median_ns IS NOT NULL AND m.counters_json IS NOT NULL "
        "  AND NOT coalesce(m.static, false) "
        "WITH m, k, collect(a)[0] AS a ORDER BY m.measurement_id LIMIT 6 "
        "RETURN m.namespace AS ns, m.target AS target, a.transform AS transform, a.params_json AS params, "
        "  m {.median_ns, .iqr_ns, .trials, .counter_source, .counters_json, .evaluator_version, .sandboxed} AS m, "
        "  k {.task, .backend, .family, .variant, .source} AS k, [(k)-[:EXHIBITS]->(p) | p.name] AS patterns",
        {"spaces": spaces}, write=False,
    )  # fmt: skip
    assert rows, "the release graph must hold explored states"
    for i, row in enumerate(rows):
        m = {key: value for key, value in row["m"].items() if value is not None and key != "counters_json"}
        counters = json.loads(row["m"]["counters_json"])
        kernel = {key: value for key, value in row["k"].items() if value is not None}
        kernel["patterns"] = row["patterns"] or ["dense-matmul"]
        for j, factor in enumerate((1.003, 0.997)):
            measurement = {**m, "median_ns": m["median_ns"] * factor, "correct": True,
                           "counters": {k: v for k, v in counters.items() if isinstance(v, int | float)}}  # fmt: skip
            child = {**kernel, "source": f"{kernel['source']}\n// re-measured {i}.{j}"}
            # A speedup comes with the child's measurement and the same run's parent median (schema
            # 0015's consistency rule); recorded as `legacy`, the one recorder of the code before 0015.
            speedup = 1.2 + 0.1 * j
            timed = {
                **measurement,
                "median_ns": measurement["median_ns"] / speedup,
                "parent_median_ns": measurement["median_ns"],
            }
            knowledge.record_attempts(row["ns"], [{
                "attempt_key": f"remeasure-{i}:{j}", "run_id": f"remeasure-{i}", "agent": "upgrade-test",
                "target": row["target"], "parent": kernel, "parent_measurement": measurement,
                "transform": {"name": row["transform"], "params": json.loads(row["params"] or "{}")},
                "child": child, "child_measurement": timed, "outcome": "kept", "speedup": speedup,
            }], Recorder(LEGACY_KEY))  # fmt: skip


@dataclass
class Upgraded:
    store: GraphStore
    knowledge: KnowledgeService
    requests: list[tuple[str, dict[str, Any]]]
    before: list[list[dict[str, Any]]]  # the code before 0010's answers, on its consolidated graph
    applied: list[Any]
    merged_states: int


@pytest.fixture(scope="module")
def upgraded(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Upgraded]:
    with release_graph(RELEASE, tmp_path_factory.mktemp("rollups")) as (_, store):
        migrate.apply(store)
        knowledge = KnowledgeService(store, MiniLMEmbedder())
        recorded = json.loads((GRAPHS / RELEASE / "answers.json").read_text())
        spaces = sorted({q["namespace"] for q in recorded["questions"]})
        _remeasure(knowledge, store, spaces)
        for namespace in spaces:
            knowledge.consolidate(namespace)
        for statement in STRIP_ROLLUPS:
            store.run_text(statement, {}, write=True)
        assert [s.version for s in migrate.status(store) if not s.applied] == [10]
        _, rows = store.run_text(
            "MATCH (m:Measurement)<-[:MERGED_INTO]-() WITH DISTINCT m "
            "RETURN m.namespace AS ns, m.target AS target, collect(DISTINCT m.task) AS tasks",
            {}, write=False,
        )  # fmt: skip
        requests = [
            (q["namespace"], q["request"]) for q in recorded["questions"]
            if q["call"] == "retrieve" and not older_signature(q)
        ]  # fmt: skip
        for row in rows:
            requests.append((row["ns"], {"mode": "global", "target": row["target"], "k": 50, "limit": 50}))
            requests += [(row["ns"], {"mode": "label", "tasks": [task], "target": row["target"], "limit": 50})
                         for task in row["tasks"]]  # fmt: skip
        old = KnowledgeService(walking_store(store), MiniLMEmbedder())
        before = [_answer(old, ns, request) for ns, request in requests]
        _, merged = store.run_text(
            "MATCH (m:Measurement)<-[:MERGED_INTO]-() RETURN count(DISTINCT m) AS n", {}, write=False
        )
        merged_states = merged[0]["n"]
        applied = migrate.apply(store)
        # In a real upgrade 0015 follows 0010 and replaces the rollup key 0010 just created again; here
        # 0015 was applied before the strip, so do what it does.
        store.run_text("DROP CONSTRAINT evidence_rollup_key IF EXISTS", {}, write=True)
        yield Upgraded(store, knowledge, requests, before, applied, merged_states)


def test_the_release_graph_has_merged_states_to_roll_up(upgraded: Upgraded) -> None:
    assert upgraded.merged_states > 0
    assert [m.version for m in upgraded.applied] == [10]
    _, rows = upgraded.store.run_text(
        "MATCH (m:Measurement)<-[:MERGED_INTO]-() WITH DISTINCT m "
        "RETURN count(m) AS merged, sum(CASE WHEN m.rollup_into = m.measurement_id AND "
        "EXISTS { (m)-[:HAS_ROLLUP]->(:EvidenceRollup) } THEN 1 ELSE 0 END) AS rolled",
        {}, write=False,
    )  # fmt: skip
    assert rows[0]["merged"] == rows[0]["rolled"] == upgraded.merged_states


def test_the_upgraded_graph_answers_what_the_consolidated_graph_answered(upgraded: Upgraded) -> None:
    after = [_answer(upgraded.knowledge, ns, request) for ns, request in upgraded.requests]
    assert len(after) == len(upgraded.before) > 0
    for (ns, request), was, now in zip(upgraded.requests, upgraded.before, after, strict=True):
        assert now == was, (ns, request)


def test_upgrading_again_and_consolidating_change_nothing(upgraded: Upgraded) -> None:
    assert migrate.apply(upgraded.store) == []
    for namespace in sorted({ns for ns, _ in upgraded.requests}):
        report = upgraded.knowledge.consolidate(namespace)
        assert (report.merged, report.rolled_up, report.changes) == (0, 0, 0), namespace


def test_attempts_from_merged_duplicates_reach_the_rollup(upgraded: Upgraded) -> None:
    """After the upgrade, record_attempts keeps the rolled-up states current: an attempt replayed from a
    merged duplicate's state (by its measurement id) is answered as walking the duplicates would."""
    store = upgraded.store
    _, rows = store.run_text(
        "MATCH (d:Measurement)-[:MERGED_INTO]->(c:Measurement) MATCH (a:Attempt)-[:FROM_STATE]->(d) "
        "WITH d, c, a ORDER BY a.attempt_key "
        "WITH d.namespace AS ns, d.measurement_id AS state, c.target AS target, d.task AS task, "
        "collect(a)[0] AS first ORDER BY state LIMIT 3 "
        "RETURN ns, state, target, task, first {.transform, .params_json} AS attempt",
        {}, write=False,
    )  # fmt: skip
    assert rows
    for i, row in enumerate(rows):
        a = row["attempt"]
        record = factories.attempt(
            f"rollup-upgrade:{i}", transform=a["transform"], speedup=1.25, target_name=row["target"],
            task=row["task"], child_source=f"void kernel(void) {{ /* again {i} */ }}",
        )  # fmt: skip
        record["transform"]["params"] = json.loads(a["params_json"])
        del record["parent"], record["parent_measurement"]
        record["parent_measurement_id"] = row["state"]
        upgraded.knowledge.record_attempts(row["ns"], [record])
    old = KnowledgeService(walking_store(store), MiniLMEmbedder())
    for ns, request in upgraded.requests:
        assert _answer(upgraded.knowledge, ns, request) == _answer(old, ns, request), (ns, request)
