"""kernelgraph.bench.http_floor, the diagnostic behind docs/scaling.md's floor under single writes: its floor
serves the agents without writing anything, and its service runs are the real write path."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from types import ModuleType

import pytest

pytestmark = pytest.mark.neo4j


def test_the_floor_answers_every_agent_and_stores_nothing_while_the_service_stores_all(
    bench_module_on_test_neo4j: Callable[[str], ModuleType], tmp_path: Path
) -> None:
    script = bench_module_on_test_neo4j("http_floor")

    report = script.main(3, 2.0, tmp_path, order=("floor", "service"), warmup_seconds=2.0)

    assert json.loads((tmp_path / "http-floor-latest.json").read_text())["runs"] == report["runs"]
    floor, service = report["runs"]
    # The agents chain their attempts by the ids they get back, so the floor's must be accepted.
    # A 503 under load is retried by the agents; anything else but 201 is a failure of the floor or the service.
    for run in (floor, service):
        assert run["acknowledged"] > 0 and run["statuses"].get("201", 0) > 0
        assert set(run["statuses"]) <= {"201", "503"} and run["unexpected_5xx"] == 0
    assert report["stored"] == {"floor": 0, "service": service["acknowledged"]}
    assert floor["cpu_ms_per_request"]["service"] > 0
    assert report["warmup"]["requests"] > 0 and report["warmup"]["unexpected_5xx"] == 0
