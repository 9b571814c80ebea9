"""`kernelgraph bench quality`: the library computes what the task computes, and the quick report has
the shape the docs table is generated from (the full run is a benchmark, not a timed test)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from kernelgraph.agent.backends.c import CBackend
from kernelgraph.agent.tasks import all_tasks
from kernelgraph.bench.quality import (
    DOCS_BEGIN,
    DOCS_END,
    QUICK_BUDGET,
    goals,
    host_cache_bytes,
    write_table,
)
from kernelgraph.cli import app


def test_every_memory_bound_task_has_an_instance_that_leaves_the_l2() -> None:
    """Read from this host's /sys: a size whose compulsory traffic does not fit one core's L2."""
    l2 = host_cache_bytes(2)
    if l2 is None:
        pytest.skip("this host does not describe its caches in /sys")
    for task in all_tasks("c"):
        x = task.make_inputs(0, False)
        if task.flops(x) / task.bytes_moved(x) >= 4:  # compute-bound (matmul): its n=1024 instance
            assert any(i.name == "1024" for i in task.instances), task.name
            continue
        sizes = [task.bytes_moved(task.at(i).make_inputs(0, False)) for i in task.instances]
        assert any(s > l2 for s in sizes), f"{task.name}: no instance leaves the {l2}-byte L2"


def test_goals_say_which_are_missed() -> None:
    rows = [
        {"task": "matmul", "instance": "1024", "bound": "compute", "vs_library": 0.4},
        {"task": "matmul", "instance": "default", "bound": "compute", "vs_library": 1.2, "library_ns": 1.0},
        {"task": "reduction", "instance": "default", "bound": "memory", "vs_library": 0.9, "library_ns": 1.0,
         "roofline_fraction": 0.75},
        {"task": "softmax", "instance": "default", "bound": "memory", "vs_library": 0.5, "library_ns": 1.0,
         "roofline_fraction": 0.2},
    ]  # fmt: skip
    g = goals(rows)
    assert g["matmul_1024_fraction_of_library"]["met"] is False
    assert g["memory_bound_fraction_of_roofline"]["reduction"]["met"] is True
    assert g["memory_bound_fraction_of_roofline"]["softmax"]["met"] is False
    assert g["fast_1"]["tasks_faster"] == ["matmul"] and g["fast_1"]["value"] == pytest.approx(1 / 3)


def test_quick_quality_report(cli_on_test_neo4j: None, tmp_path: Path) -> None:
    result = CliRunner().invoke(
        app, ["bench", "quality", "--quick", "--json", "--results-dir", str(tmp_path)]
    )
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout.strip().splitlines()[-1])
    assert report["quick"] and report["budget"] == QUICK_BUDGET and report["target"] == "cpu-native"
    assert [r["task"] for r in report["runs"]] == ["matmul", "reduction"]
    assert all(r["attempts"] == QUICK_BUDGET for r in report["runs"])
    rows = {r["task"]: r for r in report["rows"]}
    assert rows["matmul"]["bound"] == "compute" and rows["reduction"]["bound"] == "memory"
    for row in rows.values():
        assert row["kernel_outcome"] == "kept" and row["kernel_ns"] > 0 and row["library_ns"] > 0
        assert row["roofline_ns"] > 0 and row["roofline_fraction"] == pytest.approx(
            row["roofline_ns"] / row["kernel_ns"]
        )
        assert row["vs_library"] == pytest.approx(row["library_ns"] / row["kernel_ns"])
        assert row["library_outcome"] == "kept"  # timed by agent/library.py and passed the task's check
        assert len(row["load_average"]) == 3 and row["working_set_bytes"] > 0
    assert set(report["goals"]) >= {"memory_bound_fraction_of_roofline", "fast_1"}
    saved = json.loads(Path(report["saved"]).read_text())
    assert saved["rows"] == report["rows"]
    page = tmp_path / "page.md"
    page.write_text(f"# x\n{DOCS_BEGIN}\nold\n{DOCS_END}\nafter\n")
    write_table(saved, page)
    text = page.read_text()
    assert "old" not in text and text.endswith("after\n") and "| matmul | 300x300 | compute |" in text
    page.write_text("no markers")
    with pytest.raises(ValueError, match="markers"):
        write_table(saved, page)


def test_the_demo_says_how_far_its_best_kernel_is_from_the_library(
    backend: CBackend, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The demo's last agent step: its best matmul timed against the library, verdict printed."""
    from rich.console import Console

    import kernelgraph.bench.demo as commands
    from kernelgraph.agent.loop import OptimizeResult
    from kernelgraph.agent.targets import get_target
    from kernelgraph.agent.tasks import get_task

    matmul = get_task("matmul")
    source = matmul.source("c", matmul.baseline_config)  # the naive kernel: far slower than OpenBLAS
    best = OptimizeResult(task="matmul", target="cpu-native", proposer="experience", run_id="r", budget=1,
                          baseline_ns=1.0, best_ns=1.0, best_source=source, best_config=matmul.baseline_config)  # fmt: skip
    recorded = Console(record=True, width=300)
    monkeypatch.setattr(commands, "console", recorded)
    commands._versus_library(matmul, best, get_target("cpu-native"), backend)
    text = recorded.export_text()
    from kernelgraph.agent.library import library_choice

    assert "x slower than the library" in text and f"{library_choice(matmul)} " in text
