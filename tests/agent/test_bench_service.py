"""`kernelgraph bench service` end to end at a tiny size on the real Neo4j."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from kernelgraph.bench.service import BenchOptions, generate
from kernelgraph.bench.stats import percentiles
from kernelgraph.cli import app
from kernelgraph.core.settings import Settings

pytestmark = pytest.mark.neo4j

KEYS = {"ingest_attempts_per_s", "retrieve_p50_ms", "retrieve_p95_ms", "recall_at_10", "measurements",
        "retrieve_p99_ms", "http_retrieve_p95_ms", "service_rss_mb", "neo4j_rss_mb", "goals",
        "single_writes_1_agents", "single_writes_64_agents", "retrieve_fetch_k", "recall_fetch_k"}  # fmt: skip


def test_generate_reaches_the_measurement_count() -> None:
    data = generate(BenchOptions(measurements=500))
    assert 500 <= data.measurements < 500 + 4
    counted = data.states + sum(1 for a in data.attempts if a.get("child_measurement"))
    assert counted == data.measurements
    assert len({a["attempt_key"] for a in data.attempts}) == len(data.attempts)
    assert percentiles([1.0, 2.0, 3.0, 4.0]) == {"p50": 2.0, "p95": 4.0, "p99": 4.0}


def test_bench_service_cli_json(
    monkeypatch: pytest.MonkeyPatch, neo4j_settings: Settings, tmp_path: Path
) -> None:
    monkeypatch.setattr("kernelgraph.core.settings.get_settings", lambda: neo4j_settings)
    result = CliRunner().invoke(app, ["bench", "service", "--measurements", "300", "--quick", "--json",
                                      "--results-dir", str(tmp_path)])  # fmt: skip
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout.strip().splitlines()[-1])
    assert set(data) >= KEYS, KEYS - set(data)
    assert data["measurements"] >= 300
    # The read path is warmed on a namespace of its own before ingestion, with the quick query count.
    assert data["warmup"]["retrievals"] == 25
    assert data["warmup"]["namespace"] == f"{data['namespace']}-warmup"
    assert 0 < data["warmup"]["first_100_p50_ms"] <= data["warmup"]["first_100_p95_ms"]
    assert data["attempts_created"] == data["attempts"]
    # 64 agents recording one attempt per request at once: every one stored, none refused.
    assert data["single_writes_64_agents"]["statuses"] == {"201": 640}
    assert data["ingest_attempts_per_s"] > 0
    # CPU per attempt: the service's always; Neo4j's when the server is a local process to read it from.
    cpu = data["ingest_cpu_ms_per_attempt"]
    assert cpu["service"] > 0
    assert ("neo4j" in cpu) == neo4j_settings.uses_local_server
    if "neo4j" in cpu:
        assert cpu["neo4j"] > 0
    assert 0.0 <= data["recall_at_10"] <= 1.0
    assert data["retrieve_fetch_k"] is None  # a namespace this small is scored exactly: no index search
    assert data["recall_fetch_k"] >= 10  # the recall's own index searches fetch at least k
    assert data["http_mode"].startswith("uvicorn")
    assert (tmp_path / "service-bench-latest.json").exists()
    assert len(list(tmp_path.glob("service-bench-2*.json"))) == 1
