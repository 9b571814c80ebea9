"""`kernelgraph bench landscape`: measure a task's whole config space at each of its instances.

A landscape is the measured time of every config of a task's C config space (every config the
shared transforms reach from the baseline, `config_space`; a space larger than `SPACE_LIMIT` is
measured on its first `SPACE_LIMIT` configs in BFS order, and the header says so) at every instance (problem size) of the
task, taken with the sandboxed evaluator: each config is built and checked for correctness once, then
timed at each instance with its timed outputs verified. It is what the study (docs/results.md) scores
arms against: the oracle is the landscape's best config.

Points are appended, one JSON line each, to `<dir>/<label>/<task>.jsonl` as they are measured, so a
run interrupted is resumed where it stopped (memoized by config and instance). Each point records
when it was measured and the machine's load average then, and each landscape its host: two
landscapes (labels) are two independent measurements, never one reused.
"""

from __future__ import annotations

import json
import os
import platform
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from rich.progress import Progress

from kernelgraph.agent.backends.c import CBackend, gcc_version
from kernelgraph.agent.backends.timing import IN_PROCESS, TimingPlan
from kernelgraph.agent.evaluator import EVALUATOR_VERSION
from kernelgraph.agent.library import Yardsticks, library_for, yardsticks
from kernelgraph.agent.targets import Target, host_identity
from kernelgraph.agent.tasks import get_task
from kernelgraph.agent.tasks._common import ConfigSpace, config_space
from kernelgraph.agent.tasks.base import Config, Task

# Lighter than the loop's FAST_TIMING (>= 20 trials) so that ~10^4 points fit in the machine budget;
# the noise this leaves is shown by measuring every landscape twice (docs/results.md).
# The old in-process protocol: landscapes time the task's own configs (code this project renders, not a
# model's), down to L1-sized calls of a few microseconds, below the isolated protocol's per-call floor.
# Warm (`cold` off, the one plan that is): study v3's landscapes were timed so, before evaluator 17's
# cold state, and a point measured now stays one of theirs (study/versions.py SAME_LANDSCAPE_MEASUREMENT).
LANDSCAPE_TIMING = TimingPlan(
    warmup=2, min_trials=7, max_trials=25, budget_s=0.25, target_rel_iqr=0.03, verified_calls=2,
    protocol=IN_PROCESS, cold=False,
)  # fmt: skip
LANDSCAPE_VERSION = 1


def config_key(config: Config) -> str:
    """One config's identity in a landscape (keys sorted, JSON)."""
    return json.dumps(dict(config), sort_keys=True)


@dataclass(frozen=True)
class Point:
    """One measured (config, instance) of a landscape."""

    config: str  # config_key
    instance: str
    outcome: str  # "kept" when correct and timed; otherwise why not
    median_ns: float | None
    iqr_ns: float | None
    trials: int
    measured_at: str
    load_average: tuple[float, float, float]
    # Study v3 records these per point (study/versions.py); older landscapes have none.
    measurement: int = 0  # 1: measured once more because the load was above the threshold
    evaluator_version: int | None = None
    signature_version: int | None = None


SPACE_LIMIT = 5000  # configs per landscape at most: ~10^4 points must fit the machine budget


def task_space(task: Task) -> ConfigSpace:
    """The task's config space up to SPACE_LIMIT configs, and whether that is all of it."""
    return config_space(task.baseline_config, task.transforms, SPACE_LIMIT)


def space(task: Task) -> list[Config]:
    """The configs the landscape measures, baseline first (the whole space when it fits SPACE_LIMIT)."""
    return task_space(task).configs


def current_key(task: Task, stored: str) -> str:
    """A config key stored before `task` gained knobs, as the current space names that config: the
    new knobs at the baseline's values (what the code it measured rendered)."""
    return config_key({**task.baseline_config, **json.loads(stored)})


def landscape_path(directory: Path, label: str, task: str) -> Path:
    return directory / label / f"{task}.jsonl"


def _header(task: Task, target: Target, label: str) -> dict[str, Any]:
    return {
        "kind": "header",
        "landscape_version": LANDSCAPE_VERSION,
        "label": label,
        "task": task.name,
        "family": task.family,
        "instances": [{"name": i.name, "shape": list(i.shape), "regime": i.regime} for i in task.instances],
        "configs": len(space(task)),
        "space_complete": task_space(task).complete,
        "target": target.name,
        "host": host_identity(),
        "machine": platform.machine(),
        "gcc": gcc_version(),
        "evaluator_version": EVALUATOR_VERSION,
        "timing": LANDSCAPE_TIMING.request() | {"verified_calls": LANDSCAPE_TIMING.verified_calls},
        "started_at": datetime.now(UTC).isoformat(timespec="seconds"),
    }


def read_landscape(path: Path) -> tuple[dict[str, Any], list[Point]]:
    """The header and the points of one landscape file (a resumed file has several headers: the first)."""
    header: dict[str, Any] = {}
    points: list[Point] = []
    lines = path.read_text().splitlines()
    for n, line in enumerate(lines):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError:
            if n == len(lines) - 1:  # a run killed mid-line: that point is measured again on resume
                break
            raise ValueError(f"{path}:{n + 1}: not a JSON line") from None
        if row.get("kind") == "header":
            header = header or row
            continue
        points.append(
            Point(
                config=row["config"],
                instance=row["instance"],
                outcome=row["outcome"],
                median_ns=row["median_ns"],
                iqr_ns=row["iqr_ns"],
                trials=row["trials"],
                measured_at=row["measured_at"],
                load_average=tuple(row["load_average"]),
                measurement=row.get("measurement", 0),
                evaluator_version=row.get("evaluator_version"),
                signature_version=row.get("signature_version"),
            )
        )
    return header, points


def _measure_config(
    backend: CBackend, task: Task, target: Target, config: Config, instances: Sequence[str]
) -> Iterator[Point]:
    source = task.source("c", config)
    checked = backend.check(task, source, target)
    for name in instances:
        if not checked.correct:
            profile_outcome, median, iqr, trials = str(checked.outcome), None, None, 0
        else:
            result = backend.profile(task.at(name), source, target)
            profile_outcome = str(result.outcome)
            ok = result.outcome.value == "kept"
            median, iqr = (result.median_ns, result.iqr_ns) if ok else (None, None)
            trials = result.trials
        yield Point(
            config=config_key(config),
            instance=name,
            outcome=profile_outcome,
            median_ns=median,
            iqr_ns=iqr,
            trials=trials,
            measured_at=datetime.now(UTC).isoformat(timespec="seconds"),
            load_average=os.getloadavg(),
        )


def measure_landscape(
    task: Task,
    target: Target,
    directory: Path,
    label: str,
    *,
    fraction: float = 1.0,
    progress: Progress | None = None,
) -> Path:
    """Measure (or resume) `task`'s landscape `label`; returns the JSONL file.

    `fraction` < 1 measures an evenly spaced share of the config space (baseline included), for
    spaces too large for the machine budget; the share is recorded in the header.
    """
    path = landscape_path(directory, label, task.name)
    path.parent.mkdir(parents=True, exist_ok=True)
    done: set[tuple[str, str]] = set()
    if path.exists():
        text = path.read_text()
        if text and not text.endswith("\n"):  # drop a line torn by a killed run before appending
            path.write_text(text[: text.rfind("\n") + 1])
        done = {(p.config, p.instance) for p in read_landscape(path)[1]}
    configs = space(task)
    if fraction < 1.0:
        step = 1.0 / fraction
        configs = [configs[int(i * step)] for i in range(int(len(configs) * fraction))]
    names = [i.name for i in task.instances]
    backend = CBackend(counters=False, timing=LANDSCAPE_TIMING)
    todo = [c for c in configs if any((config_key(c), n) not in done for n in names)]
    bar = progress.add_task(f"{label}/{task.name}", total=len(configs)) if progress else None
    if progress and bar is not None:
        progress.update(bar, completed=len(configs) - len(todo))
    with path.open("a") as out:
        out.write(json.dumps(_header(task, target, label) | {"fraction": fraction}) + "\n")
        for config in todo:
            missing = [n for n in names if (config_key(config), n) not in done]
            for point in _measure_config(backend, task, target, config, missing):
                out.write(json.dumps(point.__dict__) + "\n")
                out.flush()
            if progress and bar is not None:
                progress.advance(bar)
    return path


def best_by_instance(points: Sequence[Point]) -> Mapping[str, tuple[str, float]]:
    """instance -> (config_key, median_ns) of its fastest correct config."""
    best: dict[str, tuple[str, float]] = {}
    for p in points:
        if p.median_ns is None:
            continue
        if p.instance not in best or p.median_ns < best[p.instance][1]:
            best[p.instance] = (p.config, p.median_ns)
    return best


def landscape_yardsticks(
    task: Task, target: Target, instance: str, median_ns: float, naive_median_ns: float | None
) -> Yardsticks:
    """A landscape time at `instance` beside the naive baseline's, the library call's (timed now, by the
    landscapes' plan, once per process and instance) and the roofline of `target`."""
    at = task.at(instance)
    return yardsticks(at, median_ns, target, naive_median_ns=naive_median_ns,
                      library=library_for(at, target, plan=LANDSCAPE_TIMING))  # fmt: skip


@dataclass(frozen=True)
class State:
    """A kernel's measured state at one instance: a profile with counters (cache counters included),
    what retrieval is keyed on. The study measures the states its experience and queries start from."""

    task: str
    instance: str
    config: str  # config_key
    median_ns: float
    counters: Mapping[str, float]
    counter_source: str
    tool_versions: Mapping[str, str]
    evaluator_version: int | None
    measured_at: str
    load_average: tuple[float, float, float]
    signature_version: int | None = None  # study v3 records it (study/versions.py); v2's states have none


def states_path(directory: Path) -> Path:
    return directory / "states.jsonl"


def read_states(path: Path) -> dict[tuple[str, str, str], State]:
    """(task, instance, config_key) -> State, from a states file (absent: none)."""
    if not path.exists():
        return {}
    states: dict[tuple[str, str, str], State] = {}
    for line in path.read_text().splitlines():
        if not line.strip():
            continue
        row = json.loads(line)
        row["load_average"] = tuple(row["load_average"])
        state = State(**row)
        try:
            key = current_key(get_task(state.task), state.config)
        except KeyError:  # a task no longer defined: its states keep their stored keys
            key = state.config
        states[(state.task, state.instance, key)] = state
    return states


def measure_states(
    task: Task,
    target: Target,
    wanted: Sequence[tuple[str, Config]],
    directory: Path,
    *,
    progress: Progress | None = None,
) -> dict[tuple[str, str, str], State]:
    """Profile (with counters) each (instance, config) of `task` not measured yet; memoized in the
    states file. A config that does not profile is reported, not stored."""
    path = states_path(directory)
    known = read_states(path)
    todo = list(
        {(i, config_key(c)): (i, c) for i, c in wanted if (task.name, i, config_key(c)) not in known}.values()
    )
    backend = CBackend(counters=True, timing=LANDSCAPE_TIMING)
    bar = progress.add_task(f"states/{task.name}", total=len(todo)) if progress and todo else None
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a") as out:
        for instance, config in todo:
            result = backend.profile(task.at(instance), task.source("c", config), target)
            if result.outcome.value != "kept":
                raise RuntimeError(
                    f"{task.name} at {instance}: {config_key(config)} did not profile: {result.reason}"
                )
            state = State(
                task=task.name,
                instance=instance,
                config=config_key(config),
                median_ns=result.median_ns,
                counters=dict(result.counters),
                counter_source=str(result.counter_source),
                tool_versions=dict(result.tool_versions),
                evaluator_version=result.evaluator_version,
                measured_at=datetime.now(UTC).isoformat(timespec="seconds"),
                load_average=os.getloadavg(),
            )
            out.write(json.dumps(state.__dict__) + "\n")
            out.flush()
            known[(state.task, state.instance, state.config)] = state
            if progress and bar is not None:
                progress.advance(bar)
    return known
