"""The matched-compute ablation: its arithmetic on constructed curves, and a real quick run end to end."""

from __future__ import annotations

import json
import math
import statistics
from pathlib import Path

import pytest
from typer.testing import CliRunner

from kernelgraph.bench.ablation import ArmRuns, goals_of, results_markdown, summarize
from kernelgraph.cli import app
from tests.agent.yardstick_checks import assert_yardsticks


def _arm(budget: int, curves: dict[str, list[list[float]]]) -> ArmRuns:
    return ArmRuns(budget, curves)


def test_summary_geomeans_spread_and_attempts_to_90_percent() -> None:
    arms = {
        "memoryless@K": _arm(2, {"a": [[1.0, 2.0], [1.0, 1.0]], "b": [[1.0, 4.0], [2.0, 2.0]]}),
        "memoryless@4K": _arm(4, {"a": [[1.0, 2.0, 2.0, 4.0], [1.0, 1.0, 1.0, 1.0]],
                                  "b": [[1.0, 4.0, 4.0, 4.0], [2.0, 2.0, 2.0, 2.0]]}),
        "text@K": _arm(2, {"a": [[1.0, 1.0], [1.0, 1.0]], "b": [[1.0, 1.0], [1.0, 1.0]]}),
        "experience@K": _arm(2, {"a": [[4.0, 4.0], [4.0, 4.0]], "b": [[4.0, 4.0], [4.0, 4.0]]}),
    }  # fmt: skip
    summary = summarize(arms, budget=2, seeds=2)
    experience = summary["arms"]["experience@K"]
    assert experience["geomean_speedup"] == pytest.approx(4.0)
    assert experience["attempts_to_90pct"] == pytest.approx(1.0) and experience["reached_90pct"] == 1.0
    memoryless = summary["arms"]["memoryless@K"]
    assert memoryless["geomean_speedup"] == pytest.approx(
        math.exp((math.log(2) + math.log(4) + math.log(2)) / 4)
    )
    assert memoryless["curve"][0] == pytest.approx(math.exp(math.log(2) / 4))
    assert memoryless["seed_spread"]["min"] == pytest.approx(math.sqrt(2))
    assert memoryless["seed_spread"]["max"] == pytest.approx(2 * math.sqrt(2))
    assert summary["arms"]["memoryless@4K"]["geomean_speedup_at_K"] == pytest.approx(
        memoryless["geomean_speedup"]
    )
    assert summary["arms"]["text@K"]["attempts_to_90pct"] is None  # never reaches 90% of the 4x found
    goals = goals_of(summary)
    assert goals["experience_matches_memoryless_4k"] and goals["experience_beats_text"]


def test_padding_keeps_a_run_that_stopped_early_at_its_last_value() -> None:
    from kernelgraph.agent.loop import OptimizeResult, StepReport
    from kernelgraph.agent.results import Outcome

    result = OptimizeResult(task="t", target="x", proposer="p", run_id="r", budget=4, baseline_ns=10.0, best_ns=5.0,
                            best_source="", best_config=None)  # fmt: skip
    result.steps = [StepReport(step=0, transform="tile", params={}, outcome=Outcome.KEPT, speedup=2.0, median_ns=5.0,
                               best_ns=5.0, speedup_so_far=2.0, diagnosis="", rationale="", attempt_key="r:0",
                               recorded=True)]  # fmt: skip
    arm = ArmRuns(4)
    arm.add("t", result)
    assert arm.curves["t"] == [[2.0, 2.0, 2.0, 2.0]]


@pytest.mark.slow
def test_quick_ablation_runs_end_to_end_on_real_kernels(
    cli_on_test_neo4j: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(
        app,
        ["bench", "ablation", "--quick", "--tasks", "reduction", "--budget", "1", "--seeds", "1",
         "--json", "--results-dir", str(tmp_path / "results")],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout.strip().splitlines()[-1])
    assert report["budget"] == 1 and report["seeds"] == 1
    assert set(report["arms"]) == {"memoryless@K", "memoryless@4K", "text@K", "hybrid@K", "experience@K"}
    for name, arm in report["arms"].items():
        assert len(arm["curve"]) == (4 if name == "memoryless@4K" else 1)
        assert arm["geomean_speedup"] >= 1.0  # nothing slower than the baseline is ever kept
        assert set(arm["per_task"]) == {"reduction"}
        for per in arm["per_task"].values():  # every run's best beside the library and the roofline
            assert len(per["yardsticks"]) == 1  # a run per seed
            for marks in per["yardsticks"]:
                assert_yardsticks(marks)
            assert per["speedups_vs_library"] == [m["speedup_vs_library"] for m in per["yardsticks"]]
        assert arm["geomean_speedup_vs_library"] == pytest.approx(
            math.exp(
                statistics.mean(
                    math.log(v) for per in arm["per_task"].values() for v in per["speedups_vs_library"]
                )
            )
        )
    saved = json.loads((tmp_path / "results" / "ablation-latest.json").read_text())
    assert saved["measured_variants"] > 0
    markdown = results_markdown(saved, "kernelgraph bench ablation --quick", "x.png")
    assert "| experience@K |" in markdown and "| vs library |" in markdown
