"""docs/scaling.md's tables are generated from the benchmark reports under results/ (one row per run)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from kernelgraph.bench.tables import BEGIN, END, render, update
from kernelgraph.cli import app

REPO = Path(__file__).resolve().parents[2]


def test_the_committed_tables_are_what_the_saved_reports_say() -> None:
    """Fails when a report was added (or a table edited by hand) without `kernelgraph bench tables`."""
    assert render(REPO / "results") in (REPO / "docs" / "scaling.md").read_text()


def _write(path: Path, report: dict[str, object]) -> None:
    path.write_text(json.dumps(report))


def test_one_row_per_run_with_its_own_verdicts(tmp_path: Path) -> None:
    results = tmp_path / "results"
    results.mkdir()
    run = {"benchmark": "service", "measurements": 1000, "ingest_attempts_per_s": 1234.5, "retrieve_p50_ms": 7.0,
           "retrieve_p95_ms": 21.0, "retrieve_p99_ms": float("nan"), "recall_at_10": 0.97,
           "code": {"commit": "0123456789abcdef", "local_changes": True}, "load_average_at_start": [0.31, 1, 1],
           "goals": {"retrieve_p95_ms <= 20": False, "recall_at_10 >= 0.95": True}}  # fmt: skip
    _write(results / "service-bench-20260101T000000Z.json", run)
    _write(results / "service-bench-20260102T000000Z.json", {**run, "ingest_attempts_per_s": 5001.0})
    _write(results / "service-bench-latest.json", run)  # a copy of the newest: not a run of its own
    text = render(results)
    rows = [line for line in text.splitlines() if line.startswith("| `service-bench-")]
    assert [row.split("|")[1].strip() for row in rows] == [
        "`service-bench-20260101T000000Z.json`", "`service-bench-20260102T000000Z.json`"
    ]  # fmt: skip
    assert "1,234" in rows[0] and "5,001" in rows[1]
    assert "| 0123456+ | 0.3 |" in rows[0]
    assert "7 / 21 / -" in rows[0]  # NaN is no figure
    assert "retrieve_p95_ms <= 20: **not met**; recall_at_10 >= 0.95: met" in rows[0]


def test_update_rewrites_only_the_generated_part_and_needs_the_markers(tmp_path: Path) -> None:
    results = tmp_path / "results"
    results.mkdir()
    doc = tmp_path / "scaling.md"
    doc.write_text(f"# Scaling\n\nprose before\n\n{BEGIN}\nold table\n{END}\n\nprose after\n")
    assert update(doc, results) is True
    text = doc.read_text()
    assert text.startswith("# Scaling\n\nprose before\n\n") and text.endswith("\n\nprose after\n")
    assert "old table" not in text and render(results) in text
    assert update(doc, results) is False  # a second run changes nothing
    doc.write_text("no markers here\n")
    with pytest.raises(ValueError, match="no generated section"):
        update(doc, results)


def test_the_command_checks_and_rewrites(tmp_path: Path) -> None:
    results = tmp_path / "results"
    results.mkdir()
    doc = tmp_path / "scaling.md"
    doc.write_text(f"{BEGIN}\nstale\n{END}\n")
    args = ["bench", "tables", "--doc", str(doc), "--results-dir", str(results)]
    stale = CliRunner().invoke(app, [*args, "--check"])
    assert stale.exit_code == 1 and "out of date" in stale.output
    assert CliRunner().invoke(app, args).exit_code == 0
    fresh = CliRunner().invoke(app, [*args, "--check"])
    assert fresh.exit_code == 0 and "up to date" in fresh.output
