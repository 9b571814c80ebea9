"""`kernelgraph bench sandbox`'s verdict per cell (kernelgraph/bench/sandbox.py): each goal of issue #26
(evaluation wall time at most +15%, rel. IQR within +0.005, medians within 2%) judged from the medians of
the repeats, and the docs table says which were missed."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from kernelgraph.agent.backends.timing import IN_PROCESS, ISOLATED
from kernelgraph.bench.sandbox import _protocol_cell, goal_interval, goal_verdict, protocols_markdown
from kernelgraph.cli import app


def _runs(wall: list[float], median_ns: list[float], rel_iqr: list[float]) -> list[dict[str, float]]:
    return [
        {"wall_s": w, "median_ns": m, "rel_iqr": r} for w, m, r in zip(wall, median_ns, rel_iqr, strict=True)
    ]


def _rows_fit_the_header(table: str) -> bool:
    lines = table.splitlines()
    return all(line.count("|") == lines[0].count("|") for line in lines)


def test_each_goal_is_judged_on_the_medians_of_the_repeats() -> None:
    old = _runs([1.0, 1.0, 9.0], [100.0, 100.0, 100.0], [0.02, 0.02, 0.5])
    within = _protocol_cell("t", "baseline", 3, {IN_PROCESS: old, ISOLATED: _runs(
        [1.14, 1.14, 0.1], [101.9, 101.9, 50.0], [0.0249, 0.0249, 0.9])}, [2.0, 3.0, 4.0], 5.0)  # fmt: skip
    assert within["meets"] == {"wall": True, "rel_iqr": True, "median": True}, within
    assert within["load_average_1m"] == {"min": 2.0, "median": 3.0, "max": 4.0}
    beyond = _protocol_cell("t", "best-A", 3, {IN_PROCESS: old, ISOLATED: _runs(
        [1.16, 1.16, 1.0], [97.9, 97.9, 100.0], [0.0251, 0.0251, 0.0])}, [2.0, 3.0, 4.0], 5.0)  # fmt: skip
    assert beyond["meets"] == {"wall": False, "rel_iqr": False, "median": False}, beyond
    table = protocols_markdown({"cells": [within, beyond]})
    assert _rows_fit_the_header(table), table
    rows = table.splitlines()
    assert rows[2].startswith("| t | baseline |") and rows[2].endswith("| all | none |")
    assert rows[3].endswith("| missed: wall, rel_iqr, median | none |"), rows[3]


def test_a_goal_is_met_or_missed_only_when_the_whole_interval_says_so() -> None:
    """The edges: a ceiling goal is met at the ceiling and missed just above it; an interval that
    touches both sides is unresolved; the median's band is closed at both ends."""
    assert goal_verdict("wall", (1.0, 1.15)) == "met" and goal_verdict("wall", (1.1501, 2.0)) == "missed"
    assert goal_verdict("wall", (1.15, 1.2)) == "unresolved"
    assert (
        goal_verdict("rel_iqr", (-0.1, 0.005)) == "met"
        and goal_verdict("rel_iqr", (0.005, 0.01)) == "unresolved"
    )
    assert goal_verdict("median", (0.98, 1.02)) == "met" and goal_verdict("median", (1.02, 1.02)) == "met"
    assert (
        goal_verdict("median", (0.97, 0.979)) == "missed" and goal_verdict("median", (1.021, 1.1)) == "missed"
    )
    assert (
        goal_verdict("median", (0.97, 1.0)) == "unresolved"
        and goal_verdict("median", (0.9, 1.1)) == "unresolved"
    )


def test_the_median_goal_says_whether_the_repeats_resolve_it() -> None:
    """The ratio of medians gets a bootstrap interval over each protocol's evaluations: a miss is
    real only when the whole interval lies outside the 2% band."""
    steady = [100.0 + 0.1 * k for k in range(20)]
    assert goal_verdict("median", goal_interval("median", steady, steady)) == "met"
    assert goal_verdict("median", goal_interval("median", [1.1 * v for v in steady], steady)) == "missed"
    bimodal = [100.0] * 10 + [130.0] * 10  # a host whose speed jumps between evaluations
    low, high = goal_interval("median", bimodal, [115.0] * 20)
    assert low < 0.98 and high > 1.02 and goal_verdict("median", (low, high)) == "unresolved"
    assert goal_interval("median", bimodal, steady) == goal_interval("median", bimodal, steady)  # seeded


def test_every_goal_says_whether_the_repeats_resolve_it() -> None:
    """The wall ratio and the rel. IQR change get intervals as the median does: a miss the repeats
    resolve (the whole interval above the ceiling) is named a real miss; one they cannot is not."""
    steady = [1.0 + 0.001 * k for k in range(20)]
    old = _runs(steady, [100.0] * 20, [0.02 + 0.0001 * k for k in range(20)])
    slower = _runs([1.3 * w for w in steady], [100.0] * 20, [0.05 + 0.0001 * k for k in range(20)])
    cell = _protocol_cell("t", "best-A", 20, {IN_PROCESS: old, ISOLATED: slower}, [1.0] * 20, 5.0)
    verdicts = (cell["wall_verdict"], cell["rel_iqr_verdict"], cell["median_verdict"])
    assert verdicts == ("missed", "missed", "met")
    assert cell["wall_ratio_ci"][0] > 1.15 and cell["rel_iqr_increase_ci"][0] > 0.005
    assert cell["paired_rel_iqr_increase"] == pytest.approx(0.03)  # each repeat's pair, isolated - in-process
    assert cell["paired_rel_iqr_increase_ci"] == pytest.approx([0.03, 0.03])
    assert cell["paired_wall_ratio_ci"] == pytest.approx([1.3, 1.3]) and cell["paired_median_ratio_ci"] == [
        1.0,
        1.0,
    ]
    assert cell["paired_verdicts"] == {"wall": "missed", "rel_iqr": "missed", "median": "met"}
    row = protocols_markdown({"cells": [cell]}).splitlines()[2]
    assert row.endswith("| missed: wall, rel_iqr | wall, rel_iqr |"), row
    same = _protocol_cell("t", "baseline", 20, {IN_PROCESS: old, ISOLATED: old}, [1.0] * 20, 5.0)
    assert (same["wall_verdict"], same["rel_iqr_verdict"]) == ("met", "met")
    bimodal = _runs([0.8] * 10 + [1.6] * 10, [100.0] * 20, [0.0] * 10 + [0.2] * 10)
    torn = _protocol_cell("t", "best-B", 20, {IN_PROCESS: old, ISOLATED: bimodal}, [1.0] * 20, 5.0)
    assert (torn["wall_verdict"], torn["rel_iqr_verdict"]) == ("unresolved", "unresolved"), torn


def _saved(tmp_path: Path, name: str, report: object) -> str:
    path = tmp_path / name
    path.write_text(json.dumps(report))
    return str(path)


def test_a_saved_report_is_judged_again_from_its_runs(tmp_path: Path) -> None:
    """`bench sandbox --rejudge` judges a report saved by older code (its cells hold the runs and
    nothing judged from them, no load either) as a new one is, and prints the docs table."""
    runs = {IN_PROCESS: _runs([1.0] * 20, [100.0] * 20, [0.02] * 20),
            ISOLATED: _runs([1.3] * 20, [100.0] * 20, [0.02] * 20)}  # fmt: skip
    old_cell = {"task": "t", "config": "best-A", "repeats": 20, "runs": runs}
    report = {"bench": "sandbox-protocols", "target": "x", "cpus": 2, "repeats": 20, "timing_plan": {"trials": 30},
              "cells": [old_cell]}  # fmt: skip
    result = CliRunner().invoke(app, ["bench", "sandbox", "--rejudge", _saved(tmp_path, "old.json", report)])
    assert result.exit_code == 0, result.output
    assert (
        "wall: the repeats say 1 missed" in result.output and "median: the repeats say 1 met" in result.output
    )
    table = result.output[result.output.index("| task |") :].rstrip()
    assert _rows_fit_the_header(table), table
    assert "| t | best-A |" in table and table.endswith("| - | missed: wall | wall |")


@pytest.mark.parametrize(
    ("content", "problem"),
    [
        (None, "cannot be read"),
        ("{not json", "is not JSON"),
        ([1, 2], "is not a report of `kernelgraph bench sandbox --compare protocols`"),
        ({"bench": "sandbox", "medians": {}}, "is not a report of `kernelgraph bench sandbox --compare protocols`"),
        ({"bench": "sandbox-protocols", "cells": []}, "has no cells"),
        ({"bench": "sandbox-protocols", "cells": [{"task": "t", "config": "c"}]}, "cell 1 (t c) has no 'runs'"),
        ({"bench": "sandbox-protocols", "cells": [{"task": "t", "config": "c", "runs": {"isolated": [], "in-process": []}}]},
         "cell 1 (t c) cannot be judged"),
    ],
)  # fmt: skip
def test_a_file_that_is_no_protocols_report_is_a_named_error(
    tmp_path: Path, content: object, problem: str
) -> None:
    path = tmp_path / "report.json"
    if isinstance(content, str):
        path.write_text(content)
    elif content is not None:
        path.write_text(json.dumps(content))
    refused = CliRunner().invoke(app, ["bench", "sandbox", "--rejudge", str(path)])
    assert refused.exit_code == 2, refused.output
    assert refused.output.startswith(f"error: --rejudge: {path}: {problem}"), refused.output


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


def test_an_evaluation_the_host_left_unjudged_is_made_again_and_counted() -> None:
    """A cell whose profile the host left unjudged (another task on the cores) is evaluated again, up
    to HOST_REFUSALS_MAX times and counted; a failure of the kernel, or a host that never frees the
    cores, still stops the bench with the reason."""
    from kernelgraph.agent.results import CheckResult, Outcome, ProfileResult
    from kernelgraph.agent.tasks import get_task
    from kernelgraph.bench import sandbox
    from kernelgraph.core.signature import CounterSource

    timed = ProfileResult(
        median_ns=100.0, iqr_ns=2.0, trials=30, counters={}, counter_source=CounterSource.CPU_TIMING
    )
    busy = ProfileResult(median_ns=float("nan"), iqr_ns=0.0, trials=0, counters={}, counter_source=CounterSource.CPU_TIMING,
                         outcome=Outcome.DISCARDED, reason="not judged: cores not free", judged=False)  # fmt: skip

    class Scripted:
        def __init__(self, profiles: list[ProfileResult]) -> None:
            self.profiles = profiles

        def check(self, *_: object) -> CheckResult:
            return CheckResult(Outcome.KEPT)

        def profile(self, *_: object, **__: object) -> ProfileResult:
            return self.profiles.pop(0)

    task = get_task("rmsnorm")
    run = sandbox._evaluate_once(task, None, "src", Scripted([busy, busy, timed]))  # type: ignore[arg-type]
    assert run["host_refusals"] == 2 and run["median_ns"] == 100.0 and run["rel_iqr"] == 0.02
    with pytest.raises(RuntimeError, match="cores not free"):
        sandbox._evaluate_once(task, None, "src", Scripted([busy] * (sandbox.HOST_REFUSALS_MAX + 1)))  # type: ignore[arg-type]


def test_the_null_control_is_judged_as_the_new_protocol_is() -> None:
    """With the null control's runs (a second in-process evaluation in each repeat) a cell also holds
    the in-process protocol judged against itself (its second evaluations against its first), by the
    same rules: here the second evaluations are as spread as the isolated ones, so the spread goal the
    isolated protocol misses is missed by the old protocol against itself too, which the summary and
    the docs table say; the isolated ones are also 5% slower, which the null control is not."""
    from kernelgraph.bench.sandbox import IN_PROCESS_AGAIN, render_protocols, verdict_counts

    steady = [1.0 + 0.001 * k for k in range(20)]
    old = _runs(steady, [100.0] * 20, [0.02 + 0.0001 * k for k in range(20)])
    again = _runs(steady, [100.5] * 20, [0.05 + 0.0001 * k for k in range(20)])
    slower = _runs(steady, [105.0] * 20, [0.05 + 0.0001 * k for k in range(20)])
    cell = _protocol_cell("t", "best-A", 20, {ISOLATED: slower, IN_PROCESS: old, IN_PROCESS_AGAIN: again}, [1.0] * 20, 5.0)  # fmt: skip
    assert cell["rel_iqr_verdict"] == "missed" and cell["null_control"]["rel_iqr_verdict"] == "missed"
    assert cell["median_ratio"] == pytest.approx(1.05) and cell["median_verdict"] == "missed"
    assert (
        cell["null_control"]["median_ratio"] == pytest.approx(1.005)
        and cell["null_control"]["median_verdict"] == "met"
    )
    assert cell["null_control"]["meets"]["wall"]
    plain = _protocol_cell("t", "baseline", 20, {ISOLATED: old, IN_PROCESS: old}, [1.0] * 20, 5.0)
    assert "null_control" not in plain
    report = {"cells": [cell, plain], "timing_plan": {"trials": 30}, "target": "x", "cpus": 2}
    assert verdict_counts(report, "null_control")["rel_iqr"] == {"missed": 1}
    summary = render_protocols(report)
    assert (
        "rel_iqr: the repeats say 1 met, 1 missed (paired by repeat: 1 met, 1 missed); "
        "in-process against itself: 1 missed (paired: 1 missed)" in summary
    ), summary
    table = protocols_markdown(report)
    null_table = table[table.index("The null control") :].splitlines()[2:]
    assert _rows_fit_the_header("\n".join(null_table)) and len(null_table) == 3, table
    assert null_table[2].startswith("| t | best-A | 1.000 |") and "| 1.005 |" in null_table[2], null_table[2]
    assert null_table[2].endswith("| rel_iqr |"), null_table[2]


def test_each_arm_runs_in_every_position_equally_often() -> None:
    """The repeats' orders: two arms alternate A B, B A; three go through their six orders, so in every
    block of six repeats each arm is first, second and third twice; repeat 0 starts with the new protocol."""
    from kernelgraph.bench.sandbox import IN_PROCESS_AGAIN, arm_order

    assert [arm_order((ISOLATED, IN_PROCESS), r) for r in range(3)] == [
        [ISOLATED, IN_PROCESS], [IN_PROCESS, ISOLATED], [ISOLATED, IN_PROCESS]]  # fmt: skip
    arms = (ISOLATED, IN_PROCESS, IN_PROCESS_AGAIN)
    block = [arm_order(arms, r) for r in range(6)]
    assert block[0][0] == ISOLATED and len({tuple(o) for o in block}) == 6
    assert all(sum(o[position] == arm for o in block) == 2 for arm in arms for position in range(3))


def test_every_cell_has_its_nth_repeat_before_any_cell_has_its_next(monkeypatch: pytest.MonkeyPatch) -> None:
    """The bench runs repeat by repeat across the cells, not cell by cell: a cell's repeats spread
    over the whole run, so a stretch of a slow host lands on every cell's figures alike. After every
    repeat the report so far, every cell judged on the repeats done, is handed on."""
    from kernelgraph.agent.tasks import get_task
    from kernelgraph.bench import sandbox

    evaluated: list[str] = []

    class NoCompile:
        def __init__(self, **_: object) -> None:
            pass

        def compile(self, *_: object) -> None:
            pass

    def evaluate(task: object, target: object, source: str, backend: object) -> dict[str, float]:
        evaluated.append(source)
        return {"wall_s": 1.0, "median_ns": 100.0 + len(evaluated) % 3, "rel_iqr": 0.02, "host_refusals": 0}

    task = get_task("rmsnorm")
    monkeypatch.setattr(sandbox, "CBackend", NoCompile)
    monkeypatch.setattr(sandbox, "_evaluate_once", evaluate)
    monkeypatch.setattr(sandbox, "_cells", lambda names: [(task, "baseline", "A"), (task, "best-A", "B")])
    saved: list[list[int]] = []
    report = sandbox.run_protocol_bench(
        ["rmsnorm"], "cpu-x86-64-v2", repeats=3, null_control=False,
        on_repeat=lambda r: saved.append([cell["repeats"] for cell in r["cells"]]),
    )  # fmt: skip
    assert evaluated == ["A", "A", "B", "B"] * 3, evaluated
    assert saved == [[1, 1], [2, 2], [3, 3]] and report["order"] == "repeat-major" and report["complete"]
    assert [len(cell["runs"][ISOLATED]) for cell in report["cells"]] == [3, 3]


def test_a_reading_paired_by_repeat_sees_through_a_host_that_moves_between_repeats() -> None:
    """A host whose speed jumps between repeats (both protocols alike within one) leaves the declared,
    unpaired median goal unresolved, while the ratios paired by repeat resolve a steady 5% as a miss
    and a steady 0.5% as met; the verdicts the goals are judged by stay the unpaired ones."""
    host = [1.0 if k % 2 else 1.3 for k in range(20)]
    old = _runs([1.0] * 20, [100.0 * h for h in host], [0.02] * 20)
    for factor, paired in ((1.05, "missed"), (1.005, "met")):
        new = _runs([1.0] * 20, [100.0 * h * factor for h in host], [0.02] * 20)
        cell = _protocol_cell("t", "baseline", 20, {IN_PROCESS: old, ISOLATED: new}, [1.0] * 20, 5.0)
        assert cell["median_verdict"] == "unresolved", cell["median_ratio_ci"]
        assert cell["paired_verdicts"]["median"] == paired and cell["paired_median_ratio"] == pytest.approx(
            factor
        )


def test_a_rejudged_report_is_drawn_where_asked(tmp_path: Path) -> None:
    """`--rejudge REPORT --plot FILE` draws the intervals to a PNG (the null control's beside where the
    report has it); `--plot` without a report to draw is a named error."""
    from kernelgraph.bench.sandbox import IN_PROCESS_AGAIN

    runs = {IN_PROCESS: _runs([1.0] * 20, [100.0] * 20, [0.02] * 20),
            ISOLATED: _runs([1.3] * 20, [101.0] * 20, [0.03] * 20),
            IN_PROCESS_AGAIN: _runs([1.0] * 20, [99.0] * 20, [0.02] * 20)}  # fmt: skip
    report = {"bench": "sandbox-protocols", "target": "x", "cpus": 2, "repeats": 20, "timing_plan": {"trials": 30},
              "cells": [{"task": "t", "config": "best-A", "repeats": 20, "runs": runs}]}  # fmt: skip
    drawn = tmp_path / "intervals.png"
    result = CliRunner().invoke(
        app, ["bench", "sandbox", "--rejudge", _saved(tmp_path, "r.json", report), "--plot", str(drawn)]
    )
    assert result.exit_code == 0, result.output
    assert drawn.read_bytes().startswith(b"\x89PNG") and "in-process against itself" in result.output
    refused = CliRunner().invoke(app, ["bench", "sandbox", "--plot", str(drawn), "--repeats", "1"])
    assert refused.exit_code == 2 and "--plot draws a --rejudge report" in refused.output, refused.output
