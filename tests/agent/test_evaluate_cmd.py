"""`kernelgraph evaluate`: the loop's full verdict on one source, as one JSON object."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from kernelgraph.agent.evaluator import EVALUATOR_VERSION
from kernelgraph.cli import app

CHEATS = Path(__file__).with_name("cheats")


def _evaluate(*args: str) -> tuple[int, dict[str, object]]:
    result = CliRunner().invoke(app, ["evaluate", "rmsnorm", "--target", "cpu-x86-64-v2", "--json", *args])
    lines = [line for line in result.stdout.splitlines() if line.startswith("{")]
    assert lines, result.output
    return result.exit_code, json.loads(lines[-1])


def test_correct_kernel_is_timed_against_its_parent() -> None:
    code, report = _evaluate("--source", str(CHEATS / "correct.c"), "--parent", str(CHEATS / "correct.c"))
    assert report["outcome"] in {"kept", "discarded"}, report["reason"]
    assert code == (0 if report["kept"] else 1)
    assert isinstance(report["speedup"], float) and 0.3 < report["speedup"] < 3.0  # itself, interleaved
    assert report["parent_median_ns"] and report["median_ns"] and report["trials"] >= 20
    assert report["evaluator_version"] == EVALUATOR_VERSION
    assert str(report["sandbox"]).startswith("bubblewrap")
    marks = report["yardsticks"]  # beside the library and the roofline; the parent was not the naive kernel
    assert (
        marks["speedup_vs_library"] > 0
        and "threads" in marks["library"]
        and marks["speedup_vs_naive"] is None
    )
    assert 0 < marks["roofline_fraction"] <= 1.0


def test_rejected_kernel_names_the_symbol_and_exits_1() -> None:
    code, report = _evaluate("--source", str(CHEATS / "exit_call.c"))
    assert code == 1
    assert report["outcome"] == "rejected" and "`exit`" in str(report["reason"])
    assert report["median_ns"] is None and report["trials"] == 0


def test_unsafe_mode_is_recorded_in_the_result() -> None:
    code, report = _evaluate("--source", str(CHEATS / "wrong_result.c"), "--unsafe-no-sandbox")
    assert code == 1 and report["outcome"] == "incorrect"
    assert report["sandbox"] == "off (--unsafe-no-sandbox)"


def test_bad_parent_is_a_usage_error_naming_the_option(tmp_path: Path) -> None:
    result = CliRunner().invoke(
        app,
        ["evaluate", "rmsnorm", "--source", str(CHEATS / "correct.c"), "--parent", str(tmp_path / "nope.c")],
    )
    assert result.exit_code == 2
    assert "--parent" in result.output
