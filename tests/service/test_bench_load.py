"""`kernelgraph bench load` end to end at a tiny size: the served service, agent processes, the checks."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from kernelgraph.bench.load import GOALS, LoadOptions, summarize_phase, summarize_profile
from kernelgraph.cli import app
from kernelgraph.core.settings import Settings
from kernelgraph.service.store import open_driver

pytestmark = pytest.mark.neo4j


def test_bench_load_cli_json(
    monkeypatch: pytest.MonkeyPatch, neo4j_settings: Settings, tmp_path: Path
) -> None:
    monkeypatch.setattr("kernelgraph.core.settings.get_settings", lambda: neo4j_settings)
    result = CliRunner().invoke(app, ["bench", "load", "--agents", "3", "--seconds", "3", "--budget", "3",
                                      "--warmup-seconds", "2", "--json", "--results-dir", str(tmp_path)])  # fmt: skip
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout.strip().splitlines()[-1])
    assert set(data["phases"]) == {"write", "loop"}
    # The warm-up ran the loop's mix in a namespace of its own, not counted in the phases or the graph check.
    warmup = data["warmup"]
    assert warmup["namespace"] == f"{data['namespace']}-warmup" and warmup["requests"] > 0
    with open_driver(neo4j_settings) as driver:
        left = driver.execute_query("MATCH (n) WHERE n.namespace IN $spaces RETURN count(n) AS n",
                                    spaces=[data["namespace"], warmup["namespace"]],
                                    database_=neo4j_settings.neo4j_database).records[0]["n"]  # fmt: skip
    assert left == 0, "both namespaces are deleted"
    write, loop = data["phases"]["write"], data["phases"]["loop"]
    assert write["agents"] == loop["agents"] == 3
    assert write["recorded_attempts"] > 0 and set(write["routes"]) == {"POST /v1/attempts"}
    assert set(loop["routes"]) == {"POST /v1/attempts", "POST /v1/retrieve", "POST /v1/targets"}
    # The loop's mix: one retrieve per recorded attempt (a run cut by the deadline may end on a retrieve).
    assert loop["retrieve_record_ratio"] == pytest.approx(1.0, abs=0.5)
    assert loop["routes"]["POST /v1/retrieve"]["statuses"].get("200", 0) > 0
    assert data["acknowledged"] == data["stored"] == data["acknowledged_stored"]
    assert data["acknowledged_missing"] == 0 and data["namespace_deleted"] is True
    assert write["unexpected_5xx"] == loop["unexpected_5xx"] == 0
    assert set(data["goals"]) == {*GOALS, "0 unexpected 5xx", "acknowledged == stored"}
    assert data["goals"]["acknowledged == stored"] is True
    caches = loop["caches"]  # the service's target cache, from /metrics
    assert caches["target_cache_hits"] + caches["target_cache_misses"] > 0
    assert 0.0 <= caches["target_cache_hit_rate"] <= 1.0
    assert data["code"]["commit"] is None or len(data["code"]["commit"]) == 40
    assert (tmp_path / "load-bench-latest.json").exists()


def test_bench_load_refuses_an_unknown_phase() -> None:
    result = CliRunner().invoke(app, ["bench", "load", "--phase", "nap"])
    assert result.exit_code == 2 and "nap" in result.output


def test_phase_summary_counts_statuses_ratio_and_unexpected_5xx() -> None:
    agent = {
        "latency_ms": {"POST /v1/attempts": [10.0, 20.0, 30.0], "POST /v1/retrieve": [5.0, 6.0]},
        "statuses": {"POST /v1/attempts": {"201": 2, "503": 1}, "POST /v1/retrieve": {"200": 1, "500": 1}},
        "acknowledged": ["a:0", "a:1"], "created": 2, "transport_errors": 0, "retries": 1, "gave_up": 0,
        "retrieves_ok": 1, "neighbours": 20, "cpu_s": 0.1, "last_response_at": 102.0,
    }  # fmt: skip
    summary = summarize_phase("loop", [agent], LoadOptions(agents=1, seconds=2), start_at=100.0)
    assert summary["recorded_attempts_per_s"] == 1.0 and summary["requests"] == 5
    assert summary["unexpected_5xx"] == 1 and summary["unavailable_503"] == 1
    assert summary["retrieve_record_ratio"] == 0.5
    assert summary["routes"]["POST /v1/attempts"]["p50_ms"] == 20.0


def test_profile_summary_groups_leaf_frames_by_package(tmp_path: Path) -> None:
    raw = tmp_path / "profile.txt"
    raw.write_text(
        "main (kernelgraph/cli/__init__.py:45);record_attempt (kernelgraph/service/api/routes/attempts.py:60);"
        "Packer._pack (neo4j/_codec/packstream/v1/__init__.py:76) 3\n"
        "main (kernelgraph/cli/__init__.py:45);BaseEventLoop._run_once (asyncio/base_events.py:1882) 1\n"
    )
    profile = summarize_profile(raw)
    assert profile["samples"] == 4
    assert profile["by_package"] == {"neo4j driver": 0.75, "uvicorn, h11, asyncio (HTTP, event loop)": 0.25}
    assert profile["inside_endpoint"] == {"record_attempt": 0.75}
