"""`kernelgraph bench sandbox`'s verdict per cell (kernelgraph/bench/sandbox.py): each goal of issue #26
(evaluation wall time at most +15%, rel. IQR within +0.005, medians within 2%) judged from the medians of
the repeats, and the docs table says which were missed."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from kernelgraph.agent.backends.timing import IN_PROCESS, ISOLATED
from kernelgraph.bench.sandbox import (
    _protocol_cell,
    median_ratio_interval,
    median_verdict,
    protocols_markdown,
)
from kernelgraph.cli import app


def _runs(wall: list[float], median_ns: list[float], rel_iqr: list[float]) -> list[dict[str, float]]:
    return [
        {"wall_s": w, "median_ns": m, "rel_iqr": r} for w, m, r in zip(wall, median_ns, rel_iqr, strict=True)
    ]


def test_each_goal_is_judged_on_the_medians_of_the_repeats() -> None:
    old = _runs([1.0, 1.0, 9.0], [100.0, 100.0, 100.0], [0.02, 0.02, 0.5])
    within = _protocol_cell("t", "baseline", 3, {IN_PROCESS: old, ISOLATED: _runs(
        [1.14, 1.14, 0.1], [101.9, 101.9, 50.0], [0.0249, 0.0249, 0.9])}, [2.0, 3.0, 4.0], 5.0)  # fmt: skip
    assert within["meets"] == {"wall": True, "rel_iqr": True, "median": True}, within
    assert within["load_average_1m"] == {"min": 2.0, "median": 3.0, "max": 4.0}
    beyond = _protocol_cell("t", "best-A", 3, {IN_PROCESS: old, ISOLATED: _runs(
        [1.16, 1.16, 1.0], [97.9, 97.9, 100.0], [0.0251, 0.0251, 0.0])}, [2.0, 3.0, 4.0], 5.0)  # fmt: skip
    assert beyond["meets"] == {"wall": False, "rel_iqr": False, "median": False}, beyond
    table = protocols_markdown({"cells": [within, beyond]}).splitlines()
    assert table[2].startswith("| t | baseline |") and table[2].endswith("| all |")
    assert table[3].endswith("| missed: wall, rel_iqr, median |"), table[3]


def test_the_median_goal_says_whether_the_repeats_resolve_it() -> None:
    """The ratio of medians gets a bootstrap interval over each protocol's evaluations: a miss is
    real only when the whole interval lies outside the 2% band."""
    steady = [100.0 + 0.1 * k for k in range(20)]
    assert median_verdict(median_ratio_interval(steady, steady)) == "within"
    assert median_verdict(median_ratio_interval([1.1 * v for v in steady], steady)) == "outside"
    bimodal = [100.0] * 10 + [130.0] * 10  # a host whose speed jumps between evaluations
    low, high = median_ratio_interval(bimodal, [115.0] * 20)
    assert low < 0.98 and high > 1.02 and median_verdict((low, high)) == "unresolved"
    assert median_ratio_interval(bimodal, steady) == median_ratio_interval(bimodal, steady)  # seeded


def test_the_json_report_is_the_only_thing_on_stdout(tmp_path: Path) -> None:
    """`--json` prints one JSON object (progress and each cell's line go to stderr): real evaluations
    of rmsnorm's baseline through both protocols, one repeat at the fewest trials."""
    result = CliRunner().invoke(app, ["bench", "sandbox", "--tasks", "rmsnorm", "--repeats", "1", "--trials", "4",
                                      "--json", "--results-dir", str(tmp_path)])  # fmt: skip
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert [(c["task"], c["config"]) for c in report["cells"]] == [("rmsnorm", "baseline")]
    cell = report["cells"][0]
    assert cell["medians"][ISOLATED]["median_ns"] > 0 and cell["medians"][IN_PROCESS]["median_ns"] > 0
    assert Path(report["saved"]).exists()
