"""Benchmark and study reports under results/: one file per run, plus `<name>-latest.json` to read; and
the closing lines every benchmark prints (the report, or the error that stopped it)."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)


def progress_bar(console: Console | None = None, *, remaining: bool = True) -> Progress:
    """The benchmarks' progress bar: what is running, done of total, time taken (and, with `remaining`,
    the time left). Kept on screen when done."""
    columns = [TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn()]
    return Progress(
        *columns, *([TimeRemainingColumn()] if remaining else []), console=console, transient=False
    )


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


def publish(
    report: dict[str, Any],
    results_dir: str | Path,
    name: str,
    *,
    as_json: bool,
    render: Callable[[Console], None],
) -> Path:
    """Save `report` (`save_report`), then print it: as one line of JSON with `as_json`, else as
    `render` draws it followed by where it was saved."""
    path = save_report(report, Path(results_dir), name)
    if as_json:
        print(json.dumps(report, default=str))
    else:
        render(Console())
        Console().print(f"saved {path}")
    return path


def report_error(err: Console, exc: Exception) -> int:
    """Print the error that stopped a benchmark (its message, for a KernelGraphError); the exit code."""
    err.print(f"[bold red]error:[/] {getattr(exc, 'message', exc)}", highlight=False)
    return 1


def code_version() -> dict[str, Any]:
    """Which code is measured: the checkout's commit, branch and whether it has local changes."""
    root = Path(__file__).resolve().parents[1]

    def git(*args: str) -> str | None:
        try:
            done = subprocess.run(["git", *args], cwd=root, capture_output=True, text=True, timeout=10)
        except (OSError, subprocess.TimeoutExpired):
            return None
        return done.stdout.strip() if done.returncode == 0 else None

    status = git("status", "--porcelain", "--untracked-files=no")
    return {"commit": git("rev-parse", "HEAD"), "branch": git("rev-parse", "--abbrev-ref", "HEAD"),
            "local_changes": bool(status) if status is not None else None}  # fmt: skip


def run_context() -> dict[str, Any]:
    """What a benchmark's figures depend on besides the code: which code, how many cores, and how busy
    the machine was when the run started (a figure taken under load is not this code's capacity)."""
    return {"code": code_version(), "cpu_count": os.cpu_count(),
            "load_average_at_start": [round(x, 2) for x in os.getloadavg()]}  # fmt: skip
