"""Study v3's measurements (docs/study-v3.md): the version guard of decision 3, on resume and on load.
Nothing is measured: a stand-in evaluator times every config by its source."""

from __future__ import annotations

import json
import zlib
from pathlib import Path
from typing import Any

import pytest

from kernelgraph.agent.evaluator import EVALUATOR_VERSION
from kernelgraph.agent.results import CheckResult, Outcome, ProfileResult
from kernelgraph.agent.tasks import get_task
from kernelgraph.bench.landscapes import read_landscape, read_states, space
from kernelgraph.bench.study import measurement, run3
from kernelgraph.bench.study.planted import planted_target
from kernelgraph.bench.study.protocol_v3 import LABELS
from kernelgraph.bench.study.targets import study_target
from kernelgraph.bench.study.versions import LandscapeVersionError, check_versions
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


def _older(n: int, row: dict[str, Any]) -> dict[str, Any]:
    return row | {"evaluator_version": EVALUATOR_VERSION - 1}


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
    with pytest.raises(LandscapeVersionError, match=rf"{path}.*evaluator {EVALUATOR_VERSION - 1}, signature "
                       rf"{SIGNATURE_VERSION} \(6 points\).*running code is evaluator {EVALUATOR_VERSION}"):  # fmt: skip
        measurement.measure_timing(task, target, tmp_path, "A", timer, sensors=QUIET, configs=space(task)[:3])
    assert timer.profiled == 0 and path.read_text() == before  # nothing appended, nothing trimmed
    with pytest.raises(LandscapeVersionError, match=str(path)):
        run3.load_lands(tmp_path, [target.name], {"reduction": task}, ("A",), ())
    with pytest.raises(LandscapeVersionError, match=str(path)):  # the counter landscape reads landscape A
        measurement.measure_counter_landscape(task, target, tmp_path, timer, sensors=QUIET)


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
