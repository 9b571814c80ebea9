"""Schema 0014 on a graph written by the previous release: every measurement whose cache counters came
from the cachegrind rebuild (counter source cpu_cachegrind, evaluator before 3) is marked
`counters_separate_build`, nothing else is, applying again changes nothing, and consolidation then
weighs those states SEPARATE_BUILD_WEIGHT with the reason (retrieval reads that weight)."""

from __future__ import annotations

from pathlib import Path

import pytest

from kernelgraph.service import migrate
from kernelgraph.service.consolidation import consolidate
from kernelgraph.service.consolidation_rules import SEPARATE_BUILD_WEIGHT
from tests.upgrade.release_server import RELEASES, release_graph

pytestmark = [pytest.mark.neo4j, pytest.mark.slow]

MARKS = (
    "MATCH (m:Measurement) RETURN m.counter_source AS source, coalesce(m.evaluator_version, 1) AS evaluator, "
    "coalesce(m.counters_separate_build, false) AS marked, count(*) AS n ORDER BY source, evaluator, marked"
)


def test_counters_of_a_separate_build_are_marked_and_weighed(tmp_path: Path) -> None:
    with release_graph(RELEASES[-1], tmp_path) as (_, store):
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
            "RETURN DISTINCT m.namespace AS ns", {}, write=False,
        )  # fmt: skip
        for row in spaces:
            consolidate(store, row["ns"])
        _, weighed = store.run_text(
            "MATCH (m:Measurement) WHERE m.counters_separate_build AND m.explored = true "
            "RETURN m.version_weight AS weight, m.version_weight_reason AS reason", {}, write=False,
        )  # fmt: skip
        assert weighed
        for row in weighed:
            assert row["weight"] is not None and row["weight"] <= SEPARATE_BUILD_WEIGHT, row
            assert "separate build" in (row["reason"] or ""), row
