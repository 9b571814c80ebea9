"""A task's measured landscape as the study reads it (kernelgraph/bench/landscapes.py measures and
stores them): the time of each (config, instance), its oracle, and how a reached config is scored on
it, beside the library and the roofline."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from kernelgraph.agent.library import Yardsticks
from kernelgraph.agent.results import Outcome
from kernelgraph.agent.targets import Target
from kernelgraph.agent.tasks.base import Config, Task, TransformSpec
from kernelgraph.bench.landscapes import (
    Point,
    config_key,
    current_key,
    landscape_path,
    landscape_yardsticks,
    read_landscape,
)


@dataclass(frozen=True)
class Landscape:
    """One task's landscape `label`: measured time of each (config, instance) that ran correctly."""

    task: Task
    label: str
    times: Mapping[tuple[str, str], float]
    outcomes: Mapping[tuple[str, str], str]
    header: Mapping[str, Any]
    points: tuple[Point, ...]

    def time(self, config: Config | str, instance: str) -> float | None:
        key = config if isinstance(config, str) else config_key(config)
        return self.times.get((key, instance))

    def outcome(self, config: Config, instance: str) -> Outcome:
        return Outcome(self.outcomes.get((config_key(config), instance), Outcome.CRASHED.value))

    def baseline_ns(self, instance: str) -> float:
        found = self.time(self.task.baseline_config, instance)
        if found is None:
            raise ValueError(
                f"landscape {self.label}/{self.task.name}: the baseline did not run at {instance}"
            )
        return found

    def oracle(self, instance: str) -> tuple[str, float]:
        """The fastest config at `instance` and its time: what a run is scored against."""
        best = min(
            ((key, t) for (key, inst), t in self.times.items() if inst == instance), key=lambda kt: kt[1]
        )
        return best

    def covers(self, configs: Iterable[Config]) -> bool:
        names = [i.name for i in self.task.instances]
        return all((config_key(c), n) in self.outcomes for c in configs for n in names)


def load_landscape(directory: Path, label: str, task: Task) -> Landscape:
    path = landscape_path(directory, label, task.name)
    if not path.exists():
        raise FileNotFoundError(
            f"no landscape {label!r} for {task.name} at {path}: measure it with "
            f"`kernelgraph bench landscape --tasks {task.name} --label {label}`"
        )
    header, points = read_landscape(path)

    # A landscape measured before the task gained knobs stores its configs without them. A point
    # measured twice (study v3 measures once more above its load threshold) is read at its quieter one.
    quietest: dict[tuple[str, str], Point] = {}
    for p in points:
        key = (current_key(task, p.config), p.instance)
        if key not in quietest or p.load_average[0] < quietest[key].load_average[0]:
            quietest[key] = p
    times = {key: p.median_ns for key, p in quietest.items() if p.median_ns is not None}
    outcomes = {key: p.outcome for key, p in quietest.items()}
    instances = {i["name"] for i in header.get("instances", [])} or {i for _, i in outcomes}
    measured = as_measured(task, {k for k, _ in outcomes}, instances)
    return Landscape(measured, label, times, outcomes, header, tuple(points))


def as_measured(task: Task, measured: set[str], instances: set[str]) -> Task:
    """`task` with its transforms confined to the configs a landscape measured, and its instances to
    the ones it measured: a simulated run searches the space that was measured, even after the
    task's space has grown (issue #30 added knobs to matmul and softmax, and matmul n=1024, after
    the study's landscapes were taken)."""

    def confined(spec: TransformSpec) -> TransformSpec:
        def apply(config: Config, params: Mapping[str, Any]) -> Config | None:
            new = spec.apply(config, params)
            return new if new is not None and config_key(new) in measured else None

        return replace(spec, apply=apply)

    return replace(
        task,
        transforms=tuple(confined(s) for s in task.transforms),
        instances=tuple(i for i in task.instances if i.name in instances),
    )


@dataclass(frozen=True)
class Score:
    fraction: float  # oracle time / time of the config reached, on the scored landscape
    speedup: float  # baseline time / time of the config reached, on the scored landscape


def score(scored: Landscape, instance: str, key: str) -> Score:
    base = scored.baseline_ns(instance)
    ns = scored.time(key, instance) or base  # correct on one landscape but not timed on the other: no gain
    return Score(scored.oracle(instance)[1] / ns, base / ns)


def beside(scored: Landscape, instance: str, key: str, target: Target) -> Yardsticks:
    """The config `key` reached, timed on the scored landscape (as `score` times it), beside the
    naive baseline, the library call and the roofline."""
    base = scored.baseline_ns(instance)
    return landscape_yardsticks(scored.task, target, instance, scored.time(key, instance) or base, base)
