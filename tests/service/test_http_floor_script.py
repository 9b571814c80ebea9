"""scripts/http_floor.py, the diagnostic behind docs/scaling.md's floor under single writes: its floor
serves the agents without writing anything, and its service runs are the real write path."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

from kernelgraph.client.settings import Settings

pytestmark = pytest.mark.neo4j

REPO = Path(__file__).resolve().parents[2]


def test_the_floor_answers_every_agent_and_stores_nothing_while_the_service_stores_all(
    monkeypatch: pytest.MonkeyPatch, neo4j_settings: Settings, tmp_path: Path
) -> None:
    spec = importlib.util.spec_from_file_location("http_floor", REPO / "scripts" / "http_floor.py")
    assert spec is not None and spec.loader is not None
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    monkeypatch.setattr(script, "get_settings", lambda: neo4j_settings)

    report = script.main(3, 2.0, tmp_path, order=("floor", "service"), warmup_seconds=2.0)

    assert json.loads((tmp_path / "http-floor-latest.json").read_text())["runs"] == report["runs"]
    floor, service = report["runs"]
    # The agents chain their attempts by the ids they get back, so the floor's must be accepted.
    assert floor["acknowledged"] > 0 and set(floor["statuses"]) == {"201"}
    assert service["acknowledged"] > 0 and set(service["statuses"]) == {"201"}
    assert report["stored"] == {"floor": 0, "service": service["acknowledged"]}
    assert floor["cpu_ms_per_request"]["service"] > 0
    assert report["warmup"]["requests"] > 0 and report["warmup"]["unexpected_5xx"] == 0
