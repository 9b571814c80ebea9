"""Benchmark and study reports under results/: one file per run, plus `<name>-latest.json` to read."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any


def timestamp() -> str:
    """UTC time as it appears in report file names (sortable, no separators that need quoting)."""
    return datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")


def save_report(report: dict[str, Any], results_dir: Path, name: str) -> Path:
    """Write `report` as `<name>-<UTC time>.json` and `<name>-latest.json` under `results_dir`."""
    results_dir.mkdir(parents=True, exist_ok=True)
    text = json.dumps(report, indent=2, default=str)
    path = results_dir / f"{name}-{timestamp()}.json"
    path.write_text(text)
    (results_dir / f"{name}-latest.json").write_text(text)
    return path
