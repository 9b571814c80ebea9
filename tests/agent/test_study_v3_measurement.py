"""Study v3's measurement of its plan (docs/study-v3.md): the version guard of decision 3 on resume and on
load (and the command's refusal, exit 2), and the development stage's measurement of a whole plan killed
and resumed, its estimate printed first and its summary beside the landscapes. Nothing is measured: a
stand-in evaluator times every config by its source."""

from __future__ import annotations

import json
import zlib
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from kernelgraph.agent.evaluator import EVALUATOR_VERSION
from kernelgraph.agent.results import CheckResult, Outcome, ProfileResult
from kernelgraph.agent.tasks import get_task
from kernelgraph.bench.landscapes import read_landscape, read_states, space, states_path
from kernelgraph.bench.study import measurement, plan_measurement, planner, run3
from kernelgraph.bench.study.planted import planted_target
from kernelgraph.bench.study.protocol_v3 import LABELS
from kernelgraph.bench.study.targets import study_target
from kernelgraph.bench.study.versions import SAME_LANDSCAPE_MEASUREMENT, LandscapeVersionError, check_versions
from kernelgraph.cli import app
from kernelgraph.core.signature import SIGNATURE_VERSION, CounterSource

QUIET = measurement.Sensors(load=lambda: (0.5, 0.5, 0.5), jiffies=lambda: (0, 1))


def _target(base: str = "cpu-native", threads: int = 2):  # type: ignore[no-untyped-def]
    return planted_target(study_target(base, threads, measure=False))


class Killed(Exception):
    """What the stand-in evaluator raises to stop a run, as a kill would, between two points."""


class SourceTimer:
    """Times a config by a hash of its source and instance (the same figure every run), and stops the run
    (Killed) at its `kill_after`+1-th profile."""

    def __init__(self, kill_after: int | None = None) -> None:
        self.profiled = 0
        self.kill_after = kill_after

    def check(self, task: Any, source: str, target: Any) -> CheckResult:
        return CheckResult(Outcome.KEPT)

    def profile(self, task: Any, source: str, target: Any) -> ProfileResult:
        if self.kill_after is not None and self.profiled >= self.kill_after:
            raise Killed
        self.profiled += 1
        ns = 1000.0 + zlib.crc32(f"{task.instances[0].name}:{source}".encode()) % 1000
        return ProfileResult(ns, 1.0, 7, {"time_ns": ns}, CounterSource.CPU_TIMING)


def _rewrite(path: Path, change: Any) -> None:
    """Each point's row of `path` as `change` makes it (headers kept)."""
    rows = [json.loads(x) for x in path.read_text().splitlines()]
    path.write_text("".join(json.dumps(r if r.get("kind") == "header" else change(n, r)) + "\n"
                            for n, r in enumerate(rows)))  # fmt: skip


# An evaluator that measured landscapes otherwise than the running code (versions.SAME_LANDSCAPE_MEASUREMENT).
OLDER_EVALUATOR = min(SAME_LANDSCAPE_MEASUREMENT) - 1


def _older(n: int, row: dict[str, Any]) -> dict[str, Any]:
    return row | {"evaluator_version": OLDER_EVALUATOR}


def test_every_point_records_the_running_versions_and_a_matching_file_resumes_and_loads(
    tmp_path: Path,
) -> None:
    task, target = get_task("reduction"), _target()
    configs = space(task)[:2]
    path = measurement.measure_timing(
        task, target, tmp_path, "A", SourceTimer(), sensors=QUIET, configs=configs
    )
    measurement.measure_timing(task, target, tmp_path, "B", SourceTimer(), sensors=QUIET, configs=configs)
    points = read_landscape(path)[1]
    assert {(p.evaluator_version, p.signature_version) for p in points} == {
        (EVALUATOR_VERSION, SIGNATURE_VERSION)
    }
    states = read_states(
        measurement.measure_counter_landscape(task, target, tmp_path, SourceTimer(), sensors=QUIET)
    )
    assert {(s.evaluator_version, s.signature_version) for s in states.values()} == {
        (EVALUATOR_VERSION, SIGNATURE_VERSION)
    }
    timer = SourceTimer()
    measurement.measure_timing(task, target, tmp_path, "A", timer, sensors=QUIET, configs=configs)
    assert timer.profiled == 0  # resumed: nothing missing
    lands = run3.load_lands(tmp_path, [target.name], {"reduction": task}, LABELS, ())
    assert len(lands[target.name]["A"]["reduction"].points) == len(points)
    assert run3.load_states(tmp_path, target) == states


def test_a_landscape_of_another_evaluator_version_is_refused_on_resume_and_on_load(tmp_path: Path) -> None:
    task, target = get_task("reduction"), _target()
    configs = space(task)[:2]
    path = measurement.measure_timing(
        task, target, tmp_path, "A", SourceTimer(), sensors=QUIET, configs=configs
    )
    _rewrite(path, _older)
    before = path.read_text()
    timer = SourceTimer()
    with pytest.raises(LandscapeVersionError, match=rf"{path}.*evaluator {OLDER_EVALUATOR}, signature "
                       rf"{SIGNATURE_VERSION} \(6 points\).*running code is evaluator {EVALUATOR_VERSION}"):  # fmt: skip
        measurement.measure_timing(task, target, tmp_path, "A", timer, sensors=QUIET, configs=space(task)[:3])
    assert timer.profiled == 0 and path.read_text() == before  # nothing appended, nothing trimmed
    with pytest.raises(LandscapeVersionError, match=str(path)):
        run3.load_lands(tmp_path, [target.name], {"reduction": task}, ("A",), ())
    with pytest.raises(LandscapeVersionError, match=str(path)):  # the counter landscape reads landscape A
        measurement.measure_counter_landscape(task, target, tmp_path, timer, sensors=QUIET)


def test_a_landscape_of_an_evaluator_that_measures_landscapes_alike_is_read(tmp_path: Path) -> None:
    """Evaluator 7 changed only the isolated protocol: the study's version-6 landscapes (timed in-process)
    are read, resumed and mixed with 7's points as the running code's; any other version is refused."""
    task, target = get_task("reduction"), _target()
    path = measurement.measure_timing(task, target, tmp_path, "A", SourceTimer(), sensors=QUIET,
                                      configs=space(task)[:2])  # fmt: skip
    alike = sorted(SAME_LANDSCAPE_MEASUREMENT - {EVALUATOR_VERSION}) or [EVALUATOR_VERSION]
    _rewrite(path, lambda n, row: row | {"evaluator_version": alike[0]} if n % 2 else row)
    timer = SourceTimer()
    measurement.measure_timing(task, target, tmp_path, "A", timer, sensors=QUIET, configs=space(task)[:3])
    assert timer.profiled > 0  # resumed past the mixed points
    lands = run3.load_lands(tmp_path, [target.name], {"reduction": task}, ("A",), ())
    assert len(lands[target.name]["A"]["reduction"].points) == 3 * len(task.instances)


def test_a_file_mixing_versions_or_without_them_is_refused(tmp_path: Path) -> None:
    task, target = get_task("reduction"), _target()
    configs = space(task)[:2]
    path = measurement.measure_timing(
        task, target, tmp_path, "A", SourceTimer(), sensors=QUIET, configs=configs
    )
    _rewrite(path, lambda n, row: _older(n, row) if n == 1 else row)  # the first point only
    with pytest.raises(LandscapeVersionError, match=rf"{path} mixes versions: .*\(1 points\).*\(5 points\)"):
        run3.load_lands(tmp_path, [target.name], {"reduction": task}, ("A",), ())
    _rewrite(path, lambda n, row: {k: v for k, v in row.items() if not k.endswith("_version")})
    with pytest.raises(LandscapeVersionError, match="evaluator unknown, signature unknown"):  # v2's form
        measurement.measure_timing(task, target, tmp_path, "A", SourceTimer(), sensors=QUIET, configs=configs)
    # The counter landscape alike: a states file of another signature version.
    fresh = tmp_path / "fresh"
    measurement.measure_timing(task, target, fresh, "A", SourceTimer(), sensors=QUIET, configs=configs)
    states = measurement.measure_counter_landscape(task, target, fresh, SourceTimer(), sensors=QUIET)
    _rewrite(states, lambda n, row: row | {"signature_version": SIGNATURE_VERSION - 1} if n == 0 else row)
    with pytest.raises(LandscapeVersionError, match=f"{states} mixes versions"):
        run3.load_states(fresh, target)
    with pytest.raises(LandscapeVersionError, match=f"{states} mixes versions"):
        measurement.measure_counter_landscape(task, target, fresh, SourceTimer(), sensors=QUIET)
    check_versions(path, [])  # a file about to be started has nothing to refuse


def _plan(targets: list[Any]) -> dict[str, Any]:
    tasks = {n: get_task(n) for n in ("layernorm", "reduction")}
    pilot = planner.Pilot({(n, t.name): 0.05 for n in tasks for t in targets}, {n: 0.1 for n in tasks})
    return planner.plan_budget(pilot, tasks, ("reduction",), ("layernorm",), targets, 10.0)


def _measured(directory: Path, targets: list[Any]) -> set[tuple[Any, ...]]:
    """Every point the plan's files hold, without when or under which load it was measured."""
    found: set[tuple[Any, ...]] = set()
    for target in targets:
        folder = measurement.target_dir(directory, target.name)
        for label in LABELS:
            for path in (folder / label).glob("*.jsonl"):
                found |= {(target.name, label, path.stem, p.config, p.instance, p.median_ns, p.measurement)
                          for p in read_landscape(path)[1]}  # fmt: skip
        found |= {
            (target.name, "states", *key, s.median_ns) for key, s in read_states(states_path(folder)).items()
        }
    return found


def test_the_development_stage_killed_twice_resumes_to_the_points_of_an_uninterrupted_run(
    tmp_path: Path,
) -> None:
    targets = [_target("cpu-native", 2), _target("cpu-native", 1)]
    plan = _plan(targets)
    assert plan["targets"] == [t.name for t in targets] and plan["eval_tasks"] == ["reduction"]
    said: list[str] = []

    def measure(directory: Path, timer: SourceTimer) -> Path:
        instruments = plan_measurement.Instruments(timer, timer, QUIET)
        return plan_measurement.measure_plan(plan, targets, directory, instruments, say=said.append)

    whole = SourceTimer()
    summary = measure(tmp_path / "whole", whole)
    # layernorm (120 configs) A and B at the primary target, reduction (70) at both, 3 instances each;
    # then both counter landscapes at the primary target.
    assert whole.profiled == 3 * (2 * 120 + 2 * 2 * 70) + 3 * (120 + 70)
    assert said[0].startswith("plan: ") and said[len(planner.plan_lines(plan))].startswith(
        "already measured: 0 of 1560 timing points, 0 of 570 counter points"
    )
    killed = tmp_path / "killed"
    first = SourceTimer(kill_after=1000)  # in reduction's landscape B at the primary target
    with pytest.raises(Killed):
        measure(killed, first)
    second = SourceTimer(kill_after=whole.profiled - first.profiled - 100)  # in the counter landscapes
    with pytest.raises(Killed):
        measure(killed, second)
    assert not (killed / plan_measurement.SUMMARY).exists()  # written when a stage finishes only
    said.clear()
    last = SourceTimer()
    resumed = measure(killed, last)
    assert said[len(planner.plan_lines(plan))].startswith(
        "already measured: 1560 of 1560 timing points, 470 of 570"
    )
    # Only what was missing is measured, and the files end as an uninterrupted run's.
    assert first.profiled + second.profiled + last.profiled == whole.profiled and last.profiled == 100
    assert _measured(killed, targets) == _measured(tmp_path / "whole", targets)
    assert json.loads(resumed.read_text()) == json.loads(summary.read_text())


def test_the_summary_counts_each_landscape_without_its_points(tmp_path: Path) -> None:
    task, target = get_task("reduction"), _target()
    configs = space(task)[:2]
    loads = iter([(5.0, 1.0, 1.0)] + [(0.5, 0.5, 0.5)] * 100)
    sensors = replace(QUIET, load=lambda: next(loads))
    measurement.measure_timing(task, target, tmp_path, "A", SourceTimer(), sensors=sensors, configs=configs)
    measurement.measure_counter_landscape(task, target, tmp_path, SourceTimer(), sensors=QUIET)
    summary = json.loads(plan_measurement.write_summary(tmp_path).read_text())
    versions = {"evaluator_versions": [EVALUATOR_VERSION], "signature_versions": [SIGNATURE_VERSION]}
    assert summary["timing"] == {target.name: {"A": {"reduction": {
        "configs": 2, "instances": 3, "points": 7, "remeasured": 1, "not_kept": 0, "load_range": [0.5, 5.0], **versions,
    }}}}  # fmt: skip
    assert summary["counters"] == {
        target.name: {
            "reduction": {"configs": 2, "instances": 3, "points": 6, "load_range": [0.5, 0.5], **versions}
        }
    }
    assert summary["running"] == {
        "evaluator_version": EVALUATOR_VERSION,
        "signature_version": SIGNATURE_VERSION,
    }


def test_the_command_refuses_a_landscape_of_other_versions_with_exit_2(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`bench study --version 3 --stage development` on a landscape of an older evaluator: one line
    naming the file, exit 2, nothing measured (no graph needed: the refusal comes before)."""
    from kernelgraph.bench.study import command3
    from kernelgraph.cli import graph
    from kernelgraph.service import embeddings, knowledge

    target = _target()
    task = get_task("layernorm")
    landscapes, results = tmp_path / "landscapes", tmp_path / "results"
    path = measurement.measure_timing(task, target, landscapes, "A", SourceTimer(), sensors=QUIET,
                                      configs=space(task)[:1])  # fmt: skip
    _rewrite(path, _older)
    plan = planner.plan_budget(planner.Pilot({("layernorm", target.name): 0.05}, {"layernorm": 0.1}),
                               {"layernorm": task}, (), ("layernorm",), [target], 10.0)  # fmt: skip
    results.mkdir()
    (results / "study-v3-plan-latest.json").write_text(json.dumps(plan))

    @contextmanager
    def no_store() -> Any:
        yield None

    def refuse_measuring() -> Any:
        raise AssertionError("the refusal comes before anything is measured")

    monkeypatch.setattr(graph, "open_store", no_store)
    monkeypatch.setattr(knowledge, "KnowledgeService", lambda *a: None)
    monkeypatch.setattr(embeddings, "MiniLMEmbedder", lambda: None)
    monkeypatch.setattr(command3, "_targets", lambda *a, **k: [target])
    monkeypatch.setattr(plan_measurement, "host_instruments", refuse_measuring)
    result = CliRunner().invoke(app, ["bench", "study", "--version", "3", "--stage", "development",
                                      "--landscapes", str(landscapes), "--results-dir", str(results)])  # fmt: skip
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output
    assert f"error: {path} was measured with other versions: evaluator {OLDER_EVALUATOR}" in result.output
