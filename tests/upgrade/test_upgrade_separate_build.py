"""Schema 0014 on a graph written by the previous release: every measurement whose cache counters came
from the cachegrind rebuild (counter source cpu_cachegrind, evaluator before 3) is marked
`counters_separate_build`, nothing else is, applying again changes nothing, consolidation leaves their
weight alone while the namespace holds no evaluator-3 measurement, and weighs them SEPARATE_BUILD_WEIGHT
(with the superseded-evaluator weight, and the reason) once one arrives (retrieval reads that weight)."""

from __future__ import annotations

from pathlib import Path

import pytest

from kernelgraph.service import migrate
from kernelgraph.service.consolidation import consolidate
from kernelgraph.service.consolidation_rules import SEPARATE_BUILD_WEIGHT, SUPERSEDED_EVALUATOR_WEIGHT
from tests.upgrade.release_server import BEFORE_EVIDENCE_KEYS, release_graph

pytestmark = [pytest.mark.neo4j, pytest.mark.slow]

MARKS = (
    "MATCH (m:Measurement) RETURN m.counter_source AS source, coalesce(m.evaluator_version, 1) AS evaluator, "
    "coalesce(m.counters_separate_build, false) AS marked, count(*) AS n ORDER BY source, evaluator, marked"
)


def test_counters_of_a_separate_build_are_marked_and_weighed(tmp_path: Path) -> None:
    with release_graph(BEFORE_EVIDENCE_KEYS, tmp_path) as (_, store):
        _, before = store.run_text(MARKS, {}, write=False)
        assert not any(r["marked"] for r in before)
        applied = [state.version for state in migrate.apply(store)]
        assert 14 in applied
        _, after = store.run_text(MARKS, {}, write=False)
        assert sum(r["n"] for r in after) == sum(r["n"] for r in before)  # nothing added or lost
        for row in after:
            assert row["marked"] == (row["source"] == "cpu_cachegrind" and row["evaluator"] < 3), row
        marked = sum(r["n"] for r in after if r["marked"])
        assert marked > 0, "the release graph must hold cachegrind measurements"
        assert migrate.apply(store) == []
        _, spaces = store.run_text(
            "MATCH (m:Measurement) WHERE m.counters_separate_build AND m.explored = true "
            "RETURN m.namespace AS ns, count(*) AS n ORDER BY n DESC LIMIT 1", {}, write=False,
        )  # fmt: skip
        namespace = spaces[0]["ns"]
        consolidate(store, namespace)
        weights = (
            "MATCH (m:Measurement {namespace: $ns}) WHERE m.counters_separate_build AND m.explored = true "
            "RETURN m.version_weight AS weight, m.version_weight_reason AS reason"
        )
        _, alone = store.run_text(weights, {"ns": namespace}, write=False)
        assert all("separate build" not in (r["reason"] or "") for r in alone), alone
        # An evaluator-3 measurement of one of the kernels arrives (a copy, re-measured by the new evaluator).
        store.run_text(
            "MATCH (m:Measurement {namespace: $ns}) WHERE m.counters_separate_build AND m.explored = true "
            "WITH m LIMIT 1 CREATE (n:Measurement) "
            "SET n = m {.*, measurement_id: m.measurement_id + '-evaluator-3', evaluator_version: 3, "
            "counters_separate_build: null, version_weight: null, version_weight_reason: null}",
            {"ns": namespace}, write=True,
        )  # fmt: skip
        consolidate(store, namespace)
        _, weighed = store.run_text(weights, {"ns": namespace}, write=False)
        assert weighed
        for row in weighed:
            assert row["weight"] == SEPARATE_BUILD_WEIGHT * SUPERSEDED_EVALUATOR_WEIGHT, row
            assert "separate build" in row["reason"], row
