"""A graph written by the previous release, upgraded to schema 0015 (evidence trust): its evidence is
`legacy` (recorded before keys were tracked), unverified, keyed per recorder, and answers retrieval as
it did; new evidence lands in aggregates of its own key beside it (tests/upgrade/test_upgrade.py checks
the release's recorded answers on the same upgraded graph)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from kernelgraph.core.errors import Retryable
from kernelgraph.service import migrate
from kernelgraph.service.knowledge import KnowledgeService
from kernelgraph.service.recorder import Recorder
from kernelgraph.service.retrieval import LEGACY_KEY
from kernelgraph.service.store import GraphStore
from tests.upgrade.release_server import BEFORE_EVIDENCE_KEYS, release_graph

pytestmark = [pytest.mark.neo4j, pytest.mark.slow]

RELEASE = BEFORE_EVIDENCE_KEYS


def _one(store: GraphStore, query: str, **params: object) -> dict[str, object]:
    _, rows = store.run_text(query, dict(params), write=False)
    return rows[0]


@pytest.fixture(scope="module")
def upgraded(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[GraphStore, dict[str, object]]]:
    """The release's graph, with what retrieval answered before 0015 (the code's own query on the old
    schema is today's with one voice: the state before `schema apply` reached 0015)."""
    home: Path = tmp_path_factory.mktemp(f"upgrade-trust-{RELEASE}")
    with release_graph(RELEASE, home) as (_, store):
        before = _one(store, "MATCH (e:StateEvidence) RETURN count(e) AS aggregates, sum(e.attempts) AS attempts, "
                             "count(e.key_id) AS keyed")  # fmt: skip
        applied = [state.version for state in migrate.apply(store)]
        assert 15 in applied
        yield store, before


def test_the_upgrade_marks_every_aggregate_and_attempt_legacy_and_unverified(
    upgraded: tuple[GraphStore, dict[str, object]],
) -> None:
    store, before = upgraded
    assert before["aggregates"] and before["keyed"] == 0  # the release kept no recorder
    after = _one(store, "MATCH (e:StateEvidence) RETURN count(e) AS aggregates, sum(e.attempts) AS attempts, "
                        "collect(DISTINCT e.key_id) AS keys, collect(DISTINCT e.verified) AS verified")  # fmt: skip
    assert (after["aggregates"], after["attempts"]) == (before["aggregates"], before["attempts"])
    assert (after["keys"], after["verified"]) == ([LEGACY_KEY], [False])
    attempts = _one(store, "MATCH (a:Attempt) RETURN collect(DISTINCT a.recorded_by) AS by, "
                           "count(a.content_hash) AS hashed")  # fmt: skip
    assert attempts == {"by": [LEGACY_KEY], "hashed": 0}
    _, constraints = store.run_text(
        "SHOW CONSTRAINTS YIELD name RETURN collect(name) AS names", {}, write=False
    )
    names = set(constraints[0]["names"])
    assert {"state_evidence_key_per_recorder", "evidence_rollup_key_per_recorder"} <= names
    assert not {"state_evidence_key", "evidence_rollup_key"} & names


def test_new_evidence_gets_its_own_keys_aggregate_and_a_legacy_key_replays(
    upgraded: tuple[GraphStore, dict[str, object]],
) -> None:
    store, _ = upgraded
    knowledge = KnowledgeService(store)
    row = _one(store, "MATCH (a:Attempt)-[:FROM_STATE]->(m:Measurement)-[:OF]->(k:Kernel) "
                      "WHERE a.speedup IS NOT NULL AND m.median_ns IS NOT NULL "
                      "RETURN a.namespace AS ns, a.attempt_key AS key, a.target AS target, a.transform AS transform, "
                      "a.params_json AS params, m.measurement_id AS state, k {.task, .backend, .source} AS kernel, "
                      "m.median_ns AS median ORDER BY a.attempt_key LIMIT 1")  # fmt: skip
    ns, kernel = str(row["ns"]), dict(row["kernel"])  # type: ignore[call-overload]
    child = {**kernel, "source": f"{kernel['source']}\n// after the upgrade", "patterns": ["dense-matmul"]}
    median = float(row["median"])  # type: ignore[arg-type]
    record = {
        "attempt_key": "after-upgrade:0", "run_id": "after-upgrade", "agent": "upgrade-test",
        "target": row["target"], "parent_measurement_id": row["state"],
        "transform": {"name": row["transform"], "params": {}}, "child": child,
        "child_measurement": {"median_ns": median / 1.5, "correct": True, "counter_source": "cpu_timing",
                              "parent_median_ns": median},
        "outcome": "kept", "speedup": 1.5,
    }  # fmt: skip
    try:
        [created] = knowledge.record_attempts(ns, [record], Recorder("after-key"))
    except Retryable:  # a fresh server's first write compiles the recording query: on a loaded
        # machine that alone took 12 s of the write's 30 s; the service answers 503 and clients retry
        [created] = knowledge.record_attempts(ns, [record], Recorder("after-key"))
    assert created.created
    keys = _one(store, "MATCH (e:StateEvidence {namespace: $ns, measurement_id: $state}) "
                       "RETURN collect(DISTINCT e.key_id) AS keys", ns=ns, state=row["state"])  # fmt: skip
    assert sorted(keys["keys"]) == ["after-key", LEGACY_KEY]  # type: ignore[arg-type]
    # An attempt stored before 0015 has no content hash: its key replays whatever is sent.
    [replayed] = knowledge.record_attempts(ns, [{**record, "attempt_key": row["key"]}])
    assert replayed.created is False
