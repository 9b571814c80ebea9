"""python -m kernelgraph.bench.measure_landscapes measures A then B of each task, the development set
first, and stops at the first failure (so an interrupted run leaves whole pairs)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path


def _run(tmp_path: Path, fail_on: str) -> tuple[int, list[str]]:
    log = tmp_path / "calls"
    fake = tmp_path / "kernelgraph"
    fake.write_text(
        f'#!/bin/sh\necho "$*" >> {log}\ncase "$*" in *"--tasks {fail_on} --label B"*) exit 3;; esac\n'
    )
    fake.chmod(0o755)
    done = subprocess.run(
        [sys.executable, "-m", "kernelgraph.bench.measure_landscapes"],
        env={"KG": str(fake), "LANDSCAPE_DIR": str(tmp_path / "lands"), "PATH": "/usr/bin:/bin"},
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    return done.returncode, log.read_text().splitlines()


def test_every_task_is_measured_a_then_b_with_the_development_set_first(tmp_path: Path) -> None:
    rc, calls = _run(tmp_path, fail_on="none")
    assert rc == 0
    assert calls[:2] == [
        f"bench landscape --tasks layernorm --label {x} --dir {tmp_path / 'lands'}" for x in "AB"
    ]
    assert len(calls) == 14 and [c.split()[5] for c in calls] == ["A", "B"] * 7


def test_a_failure_stops_the_run_with_its_exit_code(tmp_path: Path) -> None:
    rc, calls = _run(tmp_path, fail_on="matmul")
    assert rc == 3
    assert calls[-1].startswith("bench landscape --tasks matmul --label B") and len(calls) == 4
