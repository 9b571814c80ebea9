"""The development stage's measurement of study v3's plan (docs/study-v3.md): every planned landscape,
in the plan's order, resumed where a killed run stopped. Before anything is measured the plan's estimate
is printed with what is already measured, and every planned file already there is checked against the
running code's versions (study/versions.py: a refused file stops the run before it measures anything);
a progress bar follows the landscapes and the points of the current one; when all are measured, a small
summary (no per-point data, meant to be committed) is written beside the landscape files."""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rich.console import Console

from kernelgraph.agent.tasks import get_task
from kernelgraph.bench.landscapes import (
    Point,
    State,
    landscape_path,
    read_landscape,
    read_states,
    states_path,
)
from kernelgraph.bench.reports import progress_bar
from kernelgraph.bench.study import measurement, planner
from kernelgraph.bench.study.protocol_v3 import LABELS, VERSION
from kernelgraph.bench.study.targets import StudyTarget
from kernelgraph.bench.study.versions import check_versions, recorded_versions

SUMMARY = "summary.json"


@dataclass
class Instruments:
    """What measures: the timing and the counter evaluators and the load sensors (a test plants its own)."""

    timing: measurement.Evaluator
    counters: measurement.Evaluator
    sensors: measurement.Sensors = field(default_factory=measurement.Sensors)


def host_instruments() -> Instruments:
    return Instruments(measurement.timing_evaluator(), measurement.counter_evaluator())


@dataclass(frozen=True)
class PlannedLandscape:
    """One landscape of the plan: a timing landscape (`label` A or B) or the counter landscape (None)."""

    task: str
    target: StudyTarget
    label: str | None

    @property
    def name(self) -> str:
        kind = f"landscape {self.label}" if self.label else "counter landscape"
        return f"{kind} of {self.task} at {self.target.name}"

    def path(self, directory: Path) -> Path:
        folder = measurement.target_dir(directory, self.target.name)
        return landscape_path(folder, self.label, self.task) if self.label else states_path(folder)

    def measured(self, directory: Path) -> int:
        """The (config, instance) points of this landscape already in its file, once the file's versions
        are found to be the running code's."""
        path = self.path(directory)
        if self.label:
            points: Sequence[Point] = read_landscape(path)[1] if path.exists() else ()
            check_versions(path, points)
            return len({(p.config, p.instance) for p in points})
        states = [s for s in read_states(path).values() if s.task == self.task]
        check_versions(path, states)
        return len(states)

    def measure(self, directory: Path, instruments: Instruments, progress: measurement.Progress) -> None:
        task = get_task(self.task)
        if self.label:
            measurement.measure_timing(task, self.target, directory, self.label, instruments.timing,
                                       sensors=instruments.sensors, progress=progress)  # fmt: skip
        else:
            measurement.measure_counter_landscape(task, self.target, directory, instruments.counters,
                                                  sensors=instruments.sensors, progress=progress)  # fmt: skip


def planned_landscapes(plan: Mapping[str, Any], targets: Sequence[StudyTarget]) -> list[PlannedLandscape]:
    """In the order they are measured, pushed early: per target, per task (the development set at the
    primary target only), A then B back to back (a killed run leaves A whole); then the counter
    landscape of every task at the primary target (it profiles what landscape A timed correctly)."""
    timing = [PlannedLandscape(name, target, label)
              for n, target in enumerate(targets)
              for name in (*(plan["dev_tasks"] if n == 0 else ()), *plan["eval_tasks"])
              for label in LABELS]  # fmt: skip
    counters = [
        PlannedLandscape(name, targets[0], None) for name in (*plan["dev_tasks"], *plan["eval_tasks"])
    ]
    return timing + counters


def remaining_line(
    plan: Mapping[str, Any], landscapes: Sequence[PlannedLandscape], measured: Sequence[int]
) -> str:
    """What is measured already and the plan's estimate scaled to what is left (about: every point is
    taken to cost alike; a counter landscape's points are all its configs at every instance, an upper
    bound: it profiles only what landscape A timed correctly)."""
    minutes = plan["estimate_minutes"]
    left = 0.0
    parts = []
    for kind, noun, timing in (("timing", "timing", True), ("counters", "counter", False)):
        of_kind = [(x, n) for x, n in zip(landscapes, measured, strict=True) if bool(x.label) == timing]
        total = sum(plan["configs"][x.task] * len(plan["instances"][x.task]) for x, _ in of_kind)
        done = min(total, sum(n for _, n in of_kind))
        left += minutes[kind] * (1 - done / total) if total else 0.0
        parts.append(f"{done} of {total} {noun} points")
    return f"already measured: {', '.join(parts)}; about {left:.0f} of {minutes['total']:.0f} min left"  # fmt: skip


def measure_plan(
    plan: Mapping[str, Any], targets: Sequence[StudyTarget], directory: Path,
    instruments: Instruments | None = None, *, say: Callable[[str], None], console: Console | None = None,
) -> Path:  # fmt: skip
    """Every planned landscape (`planned_landscapes`), each resumed where a killed run stopped, with the
    host's instruments unless given; returns the summary written once all are measured."""
    landscapes = planned_landscapes(plan, targets)
    measured = [x.measured(directory) for x in landscapes]  # refuses other versions before measuring
    instruments = instruments or host_instruments()
    for line in planner.plan_lines(plan):
        say(line)
    say(remaining_line(plan, landscapes, measured))
    bar = progress_bar(console)
    with bar:
        overall = bar.add_task("landscapes", total=len(landscapes))
        current = bar.add_task("", total=None)

        def progress(done: int, total: int) -> None:
            bar.update(current, completed=done, total=total)

        for landscape in landscapes:
            bar.update(current, description=landscape.name, completed=0, total=None)
            started = time.monotonic()
            landscape.measure(directory, instruments, progress)
            bar.advance(overall)
            say(f"{landscape.name}: {time.monotonic() - started:.0f} s")
    path = write_summary(directory)
    say(f"landscapes summarised in {path}")
    return path


def _figures(points: Sequence[Point | State]) -> dict[str, Any]:
    loads = [p.load_average[0] for p in points]
    return {
        "configs": len({p.config for p in points}),
        "instances": len({p.instance for p in points}),
        "points": len(points),
        "evaluator_versions": sorted({p.evaluator_version for p in points}, key=str),
        "signature_versions": sorted({p.signature_version for p in points}, key=str),
        "load_range": [min(loads), max(loads)] if loads else None,
    }


def landscape_summary(directory: Path) -> dict[str, Any]:
    """Per target, label and task: configs, instances, points, the versions that measured them, the
    1-minute load range, and the points measured again above the load threshold (and those that did not
    run correctly); the counter landscape per target and task alike. Small: no per-point data."""
    timing: dict[str, dict[str, dict[str, Any]]] = {}
    counters: dict[str, dict[str, Any]] = {}
    for folder in sorted(p for p in directory.iterdir() if p.is_dir()) if directory.exists() else ():
        for label in LABELS:
            for path in sorted((folder / label).glob("*.jsonl")):
                points = read_landscape(path)[1]
                figures = _figures(points)
                figures["remeasured"] = sum(1 for p in points if p.measurement > 0)
                figures["not_kept"] = sum(1 for p in points if p.median_ns is None)
                timing.setdefault(folder.name, {}).setdefault(label, {})[path.stem] = figures
        states = list(read_states(states_path(folder)).values())
        for task in sorted({s.task for s in states}):
            mine = [s for s in states if s.task == task]
            counters.setdefault(folder.name, {})[task] = _figures(mine)
    return {"study_version": VERSION, "running": recorded_versions(), "timing": timing, "counters": counters}


def write_summary(directory: Path) -> Path:
    path = directory / SUMMARY
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(landscape_summary(directory), indent=1, sort_keys=True) + "\n")
    return path
