"""kernelgraph.bench.retrieval_warmup, the diagnostic behind bench service's warm-up, still runs and breaks
retrieval down by query (on a small graph: the exact-search path)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from types import ModuleType

import pytest

pytestmark = pytest.mark.neo4j


def test_retrieval_warmup_reports_each_query_of_the_slowest_and_the_median(
    bench_module_on_test_neo4j: Callable[[str], ModuleType], tmp_path: Path
) -> None:
    script = bench_module_on_test_neo4j("retrieval_warmup")

    report = script.main(300, warm=False, results_dir=tmp_path)

    saved = json.loads((tmp_path / "retrieval-warmup-latest.json").read_text())
    assert saved["namespace"] == report["namespace"]
    assert not report["warm"] and "warmup" not in report
    assert report["first_200"]["p50"] > 0 and report["next_200"]["p50"] > 0
    slowest, median = report["slowest_5_percent"], report["around_median"]
    assert slowest["retrievals"] == script.RETRIEVALS // 20 and median["retrievals"] == 20
    assert slowest["mean_ms"] >= median["mean_ms"]
    # Every retrieval runs the search and the aggregation; each is timed in the client and by Neo4j.
    assert {"nearest_states_by_signature_exact", "aggregate_transforms"} <= set(median["queries"])
    for times in median["queries"].values():
        assert times["client_ms"] >= times["neo4j_ms"] >= 0
    assert len(report["slowest_5_percent_at"]) == slowest["retrievals"]
