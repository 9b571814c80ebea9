"""The interference benchmark: its generator and figures on plain values, and a tiny run end to end
through `kernelgraph bench interference` and `kernelgraph consolidate` on a real Neo4j."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest
from typer.testing import CliRunner

from kernelgraph.agent.evaluator import EVALUATOR_VERSION
from kernelgraph.bench.interference import (
    GROWTH_MIX,
    TARGETS,
    Generator,
    goals,
    growth_records,
    known_best,
    make_world,
)
from kernelgraph.cli import app

TASKS = ["matmul", "softmax", "reduction"]
PATTERNS = ["dense-matmul", "row-softmax", "row-reduction"]


def test_the_core_names_each_family_s_best_transform_from_its_own_evidence() -> None:
    world = make_world(3, TASKS, PATTERNS)
    gen = Generator(random.Random(4))
    records = [r for land in world.core for _ in range(12) for r in gen.run(land, TARGETS[0], tries=6)]
    best = known_best(records, gen.from_baseline, world.core)
    # With enough evidence the stored best is the landscape's best for most families.
    assert sum(best[land.task] == land.best()[0] for land in world.core) >= 2
    # Re-runs re-measure the same baseline kernel: the same source, another measurement.
    baselines = {
        (r["parent"]["task"], r["parent"]["source"]) for r in records if r["attempt_key"] in gen.from_baseline
    }
    assert len(baselines) == len(TASKS)
    medians = {r["parent_measurement"]["median_ns"] for r in records if r["attempt_key"] in gen.from_baseline}
    assert len(medians) > len(TASKS)


def test_growth_follows_the_mix_and_marks_the_superseded_evaluator() -> None:
    world = make_world(3, TASKS, PATTERNS)
    grown = growth_records(world, Generator(random.Random(5)), 600)
    assert set(grown) == set(GROWTH_MIX)
    for kind, share in GROWTH_MIX.items():
        assert len(grown[kind]) >= int(600 * share)
    assert all("evaluator_version" not in r["parent_measurement"] for r in grown["superseded evaluator"])
    assert all(
        r["parent_measurement"]["evaluator_version"] == EVALUATOR_VERSION for r in grown["look-alike tasks"]
    )
    assert {r["target"] for r in grown["other targets"]} <= {t["name"] for t in TARGETS[1:]}


def test_goals_compare_the_largest_size_with_the_smallest() -> None:
    def step(mrr: float, p95: float) -> dict[str, object]:
        return {"mrr": mrr, "retrieve_ms": {"p95": p95}}

    steps = [{"recorded": step(0.9, 20.0), "consolidated": step(0.9, 20.0)},
             {"recorded": step(0.7, 25.0), "consolidated": step(0.85, 21.0)}]  # fmt: skip
    result = goals(steps)
    assert result["recorded"]["quality_met"] is False and result["recorded"]["p95_met"] is False
    assert result["consolidated"]["quality_met"] is True and result["consolidated"]["p95_met"] is True


@pytest.mark.neo4j
@pytest.mark.slow
def test_a_tiny_interference_run_end_to_end(cli_on_test_neo4j: None, tmp_path: Path) -> None:
    result = CliRunner().invoke(
        app,
        ["bench", "interference", "--scales", "1,2", "--runs-per-task", "2", "--queries-per-task", "1",
         "--repeats", "1", "--no-kernelbench", "--json", "--results-dir", str(tmp_path)],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    report = json.loads((tmp_path / "interference-latest.json").read_text())
    assert [s["scale"] for s in report["steps"]] == [1, 2]
    for step in report["steps"]:
        for arm in ("recorded", "consolidated"):
            figures = step[arm]
            assert figures["queries"] == 12 and 0 < figures["mrr"] <= 1
            assert figures["proposer_evidence"]["llm_evidence_chars_max"] <= 1_600
    first = report["steps"][0]["consolidation"]
    assert first["merged"] > 0  # every run re-measured its baseline
    assert report["steps"][1]["graph"]["attempts"] >= 2 * report["core"]["attempts"] * 0.9
    # A second consolidation of the same namespace changes nothing.
    again = CliRunner().invoke(app, ["consolidate", "--namespace", report["namespace"], "--json"])
    assert again.exit_code == 0, again.output
    assert json.loads(again.stdout)[0]["changes"] == 0
