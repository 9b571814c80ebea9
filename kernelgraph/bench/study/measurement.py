"""Study v3's measurements: landscapes A and B of each task, back to back, at each planned target, and
the counter landscape (every config at every instance profiled with counters) at the primary target.

Every timing point logs the 1-minute load average and the share of CPU time stolen by the hypervisor
while it was measured (/proc/stat); a point measured above LOAD_THRESHOLD is measured once more and
both are kept (the study reads the quieter, study/landscapes.py). Points are appended as they are
measured under `<dir>/<target>/<label>/<task>.jsonl` (states: `<dir>/<target>/states.jsonl`), so a
killed run continues where it stopped. Every point records the evaluator and signature versions of the
code that measured it, and a file of other versions is never appended to (study/versions.py).
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Protocol

from kernelgraph.agent.backends import isolated
from kernelgraph.agent.results import CheckResult, ProfileResult
from kernelgraph.agent.targets import Target
from kernelgraph.agent.tasks.base import Config, Task
from kernelgraph.bench.landscapes import (
    LANDSCAPE_TIMING,
    _header,
    config_key,
    landscape_path,
    read_landscape,
    read_states,
    space,
    states_path,
)
from kernelgraph.bench.study.protocol_v3 import LABELS, LOAD_THRESHOLD
from kernelgraph.bench.study.targets import StudyTarget
from kernelgraph.bench.study.versions import check_versions, recorded_versions

PROC_STAT = Path("/proc/stat")


# Called with (done, all): configs of a timing landscape, points of a counter landscape.
Progress = Callable[[int, int], None]


class Evaluator(Protocol):
    def check(self, task: Task, source: str, target: Target) -> CheckResult: ...
    def profile(self, task: Task, source: str, target: Target) -> ProfileResult: ...


def cpu_jiffies(path: Path = PROC_STAT) -> tuple[int, int]:
    """(stolen, total) CPU time of the whole machine since boot, in jiffies (`isolated.cpu_jiffies`)."""
    return isolated.cpu_jiffies(path.read_text())


def steal_share(before: tuple[int, int], after: tuple[int, int]) -> float:
    total = after[1] - before[1]
    return (after[0] - before[0]) / total if total > 0 else 0.0


@dataclass
class Sensors:
    """Where a point's load and steal come from (a test plants its own)."""

    load: Callable[[], tuple[float, float, float]] = os.getloadavg
    jiffies: Callable[[], tuple[int, int]] = cpu_jiffies


def target_dir(directory: Path, target: str) -> Path:
    return directory / target


def _timed_point(
    evaluator: Evaluator, task: Task, source: str, target: Target, config: Config, instance: str,
    sensors: Sensors, attempt: int,
) -> dict[str, Any]:  # fmt: skip
    before = sensors.jiffies()
    result = evaluator.profile(task.at(instance), source, target)
    after = sensors.jiffies()
    ok = result.outcome.value == "kept"
    return {
        "config": config_key(config), "instance": instance, "outcome": str(result.outcome),
        "median_ns": result.median_ns if ok else None, "iqr_ns": result.iqr_ns if ok else None,
        "trials": result.trials, "measured_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "load_average": list(sensors.load()), "steal_share": steal_share(before, after),
        "target": target.name, "measurement": attempt, **recorded_versions(),
    }  # fmt: skip


def config_points(
    evaluator: Evaluator, task: Task, target: Target, config: Config, instances: Sequence[str],
    sensors: Sensors, threshold: float = LOAD_THRESHOLD,
) -> Iterator[dict[str, Any]]:  # fmt: skip
    """The points of one config at `instances`: built and checked once; at each instance timed, and
    timed once more when the load was above `threshold` (both points kept)."""
    source = task.source("c", config)
    checked = evaluator.check(task, source, target)
    for name in instances:
        if not checked.correct:
            yield {
                "config": config_key(config), "instance": name, "outcome": str(checked.outcome), "median_ns": None,
                "iqr_ns": None, "trials": 0, "measured_at": datetime.now(UTC).isoformat(timespec="seconds"),
                "load_average": list(sensors.load()), "steal_share": 0.0, "target": target.name, "measurement": 0,
                **recorded_versions(),
            }  # fmt: skip
            continue
        point = _timed_point(evaluator, task, source, target, config, name, sensors, 0)
        yield point
        if point["load_average"][0] > threshold:
            yield _timed_point(evaluator, task, source, target, config, name, sensors, 1)


def _resume(path: Path) -> set[tuple[str, str]]:
    """The (config, instance) pairs `path` holds, once its versions are the running code's."""
    if not path.exists():
        return set()
    points = read_landscape(path)[1]
    check_versions(path, points)  # before the torn line is dropped: a refused file is left as it was
    text = path.read_text()
    if text and not text.endswith("\n"):  # drop a line torn by a killed run before appending
        path.write_text(text[: text.rfind("\n") + 1])
    return {(p.config, p.instance) for p in points}


def measure_timing(
    task: Task, target: StudyTarget, directory: Path, label: str, evaluator: Evaluator,
    *, sensors: Sensors | None = None, configs: Sequence[Config] | None = None, progress: Progress | None = None,
) -> Path:  # fmt: skip
    """Measure (or resume) `task`'s timing landscape `label` at `target`; returns its file. `progress`
    counts configs: done (with every instance) of all, at the start and after each config."""
    sensors = sensors or Sensors()
    path = landscape_path(target_dir(directory, target.name), label, task.name)
    path.parent.mkdir(parents=True, exist_ok=True)
    done = _resume(path)
    names = [i.name for i in task.instances]
    chosen = list(configs) if configs is not None else space(task)
    todo = [c for c in chosen if any((config_key(c), n) not in done for n in names)]
    if progress:
        progress(len(chosen) - len(todo), len(chosen))
    with path.open("a") as out:
        header = _header(task, target.target, label) | {"study_version": 3, "threads": target.threads,
                                                         "load_threshold": LOAD_THRESHOLD}  # fmt: skip
        out.write(json.dumps(header) + "\n")
        for measured, config in enumerate(todo, start=len(chosen) - len(todo) + 1):
            missing = [n for n in names if (config_key(config), n) not in done]
            for point in config_points(evaluator, task, target.target, config, missing, sensors):
                out.write(json.dumps(point) + "\n")
                out.flush()
            if progress:
                progress(measured, len(chosen))
    return path


def measure_counter_landscape(
    task: Task, target: StudyTarget, directory: Path, evaluator: Evaluator, *, sensors: Sensors | None = None,
    progress: Progress | None = None,
) -> Path:  # fmt: skip
    """Every config of `task` that ran correctly in landscape A, profiled with counters at every instance
    (the states per-step retrieval is keyed on); memoized in the target's states file. `progress` counts
    (config, instance) points: done of all, at the start and after each point."""
    sensors = sensors or Sensors()
    folder = target_dir(directory, target.name)
    path = states_path(folder)
    known = read_states(path)
    check_versions(path, known.values())
    timed = landscape_path(folder, LABELS[0], task.name)
    _, points = read_landscape(timed)
    check_versions(timed, points)
    kept = {(p.config, p.instance) for p in points if p.median_ns is not None}
    by_key = {config_key(c): c for c in space(task)}
    wanted = [(key, inst) for key, inst in sorted(kept) if key in by_key]
    todo = [(key, inst) for key, inst in wanted if (task.name, inst, key) not in known]
    if progress:
        progress(len(wanted) - len(todo), len(wanted))
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a") as out, (folder / "states-failed.jsonl").open("a") as failed:
        for measured, (key, instance) in enumerate(todo, start=len(wanted) - len(todo) + 1):
            result = evaluator.profile(task.at(instance), task.source("c", by_key[key]), target.target)
            if result.outcome.value != "kept":  # timed correctly once, not now: kept aside, with why
                failed.write(json.dumps({"task": task.name, "instance": instance, "config": key,
                                         "outcome": str(result.outcome), "reason": result.reason}) + "\n")  # fmt: skip
            else:
                row = {
                    "task": task.name, "instance": instance, "config": key, "median_ns": result.median_ns,
                    "counters": dict(result.counters), "counter_source": str(result.counter_source),
                    "tool_versions": dict(result.tool_versions), **recorded_versions(),
                    "measured_at": datetime.now(UTC).isoformat(timespec="seconds"),
                    "load_average": list(sensors.load()),
                }  # fmt: skip
                out.write(json.dumps(row) + "\n")
                out.flush()
            if progress:
                progress(measured, len(wanted))
    return path


def timing_evaluator() -> Evaluator:
    from kernelgraph.agent.backends.c import CBackend

    return CBackend(counters=False, timing=LANDSCAPE_TIMING)


def counter_evaluator() -> Evaluator:
    from kernelgraph.agent.backends.c import CBackend

    return CBackend(counters=True, timing=LANDSCAPE_TIMING)
