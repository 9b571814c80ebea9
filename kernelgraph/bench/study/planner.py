"""Study v3's pilot and budget planner: time a few configs of each task at each target (and, with
counters, at the primary target), extrapolate each landscape's cost to the whole config space, and cut
targets first, then tasks, never configs, until landscapes A and B (the development set's at the
primary target, the evaluation tasks' at every kept target) and one counter landscape at the primary
target fit the budget. The plan is printed and saved before anything is measured."""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

from kernelgraph.agent.tasks.base import Config, Task
from kernelgraph.bench.landscapes import task_space
from kernelgraph.bench.study.measurement import Evaluator, Sensors, config_points
from kernelgraph.bench.study.protocol_v3 import LABELS, NEXT_TARGET_TARGETS, PILOT_CONFIGS
from kernelgraph.bench.study.targets import StudyTarget


def pilot_configs(task: Task, n: int = PILOT_CONFIGS) -> list[Config]:
    """`n` configs spread evenly over the task's space, the baseline first."""
    configs = task_space(task).configs
    step = max(1, len(configs) // n)
    return [configs[i] for i in range(0, len(configs), step)][:n]


def time_configs(
    evaluator: Evaluator, task: Task, target: StudyTarget, configs: Sequence[Config],
    clock: Callable[[], float] = time.monotonic,
) -> float:  # fmt: skip
    """Seconds per config (built, checked, timed at every instance, as a landscape measures it)."""
    names = [i.name for i in task.instances]
    started = clock()
    for config in configs:
        for _ in config_points(evaluator, task, target.target, config, names, Sensors()):
            pass
    return (clock() - started) / max(1, len(configs))


def counter_seconds(
    evaluator: Evaluator, task: Task, target: StudyTarget, configs: Sequence[Config],
    clock: Callable[[], float] = time.monotonic,
) -> float:  # fmt: skip
    """Seconds per config of the counter landscape (profiled with counters at every instance)."""
    started = clock()
    for config in configs:
        source = task.source("c", config)
        for instance in task.instances:
            evaluator.profile(task.at(instance.name), source, target.target)
    return (clock() - started) / max(1, len(configs))


@dataclass(frozen=True)
class Pilot:
    """Seconds per config: timing[(task, target)] for one timing landscape, counters[task] for the
    counter landscape at the primary target."""

    timing: Mapping[tuple[str, str], float]
    counters: Mapping[str, float]
    wall_s: float = 0.0


def run_pilot(
    tasks: Sequence[Task], targets: Sequence[StudyTarget], timing: Evaluator, counters: Evaluator,
    *, say: Callable[[str], None] = lambda _: None, saved: Path | None = None,
) -> Pilot:  # fmt: skip
    """Seconds per config of each task at each target, and of its counter landscape at the first
    target. With `saved`, every figure is appended there as it is taken and a rerun continues (the
    pilot itself takes minutes: cachegrind at full size is slow)."""
    started = time.monotonic()
    known: dict[tuple[str, str, str], float] = {}
    if saved is not None and saved.exists():
        for line in saved.read_text().splitlines():
            if line.strip():
                row = json.loads(line)
                known[(row["kind"], row["task"], row["target"])] = row["seconds_per_config"]
    primary = targets[0]

    def figure(kind: str, task: Task, target: StudyTarget, measure: Callable[[], float]) -> float:
        key = (kind, task.name, target.name)
        if key not in known:
            known[key] = measure()
            if saved is not None:
                saved.parent.mkdir(parents=True, exist_ok=True)
                with saved.open("a") as out:
                    out.write(json.dumps({"kind": kind, "task": task.name, "target": target.name,
                                          "seconds_per_config": known[key]}) + "\n")  # fmt: skip
        say(f"pilot {task.name} {kind} at {target.name}: {known[key]:.2f} s per config")
        return known[key]

    per: dict[tuple[str, str], float] = {}
    counter_per: dict[str, float] = {}
    for task in tasks:
        configs = pilot_configs(task)
        for target in targets:
            per[(task.name, target.name)] = figure(
                "timing", task, target, partial(time_configs, timing, task, target, configs)
            )
        counter_per[task.name] = figure(
            "counters", task, primary, partial(counter_seconds, counters, task, primary, configs[:2])
        )
    return Pilot(per, counter_per, time.monotonic() - started)


def estimate_s(
    pilot: Pilot,
    configs: Mapping[str, int],
    dev_tasks: Sequence[str],
    eval_tasks: Sequence[str],
    targets: Sequence[str],
) -> dict[str, float]:
    """Machine seconds: A and B of the development tasks at the primary target (the first) and of the
    evaluation tasks at every target, and the counter landscape of every task at the primary target."""
    if not targets:
        return {"timing_s": 0.0, "counters_s": 0.0, "total_s": 0.0}
    timing = sum(len(LABELS) * configs[t] * pilot.timing[(t, targets[0])] for t in dev_tasks)
    timing += sum(len(LABELS) * configs[t] * pilot.timing[(t, g)] for t in eval_tasks for g in targets)
    counters = sum(configs[t] * pilot.counters[t] for t in (*dev_tasks, *eval_tasks))
    return {"timing_s": timing, "counters_s": counters, "total_s": timing + counters}


def plan_budget(
    pilot: Pilot,
    tasks: Mapping[str, Task],
    eval_tasks: Sequence[str],
    dev_tasks: Sequence[str],
    targets: Sequence[StudyTarget],
    budget_minutes: float,
) -> dict[str, Any]:
    """The plan: which tasks and targets are measured, and the estimate. Declared rules, in order:
    a task whose space is larger than the landscapes measure whole is no candidate (configs are never
    cut), nor is an unavailable target; targets beyond the NEXT_TARGET_TARGETS the next-target
    experiment needs are cut first, from the last, while over budget; then the evaluation tasks are
    kept in the protocol's order while they fit (one that does not fit is cut, a later, cheaper one may
    still be kept); if none fits, the last target is cut and the tasks chosen again, never the primary.
    The development set (measured at the primary target only) is never cut."""
    cuts: list[str] = []
    configs = {name: len(task_space(task).configs) for name, task in tasks.items()}
    candidates = []
    for name in eval_tasks:
        if not task_space(tasks[name]).complete:
            cuts.append(f"task {name}: its space is larger than a landscape measures whole")
        else:
            candidates.append(name)
    kept_targets = []
    for target in targets:
        if target.available:
            kept_targets.append(target.name)
        else:
            cuts.append(f"target {target.name}: {target.why_not}")
    budget_s = budget_minutes * 60.0
    dev = list(dev_tasks)

    def total(chosen: Sequence[str], at: Sequence[str]) -> float:
        return estimate_s(pilot, configs, dev, chosen, at)["total_s"]

    while total(candidates, kept_targets) > budget_s and len(kept_targets) > NEXT_TARGET_TARGETS:
        cuts.append(
            f"target {kept_targets[-1]}: over budget ({total(candidates, kept_targets) / 60:.0f} min with it)"
        )
        kept_targets.pop()

    def choose(at: Sequence[str]) -> tuple[list[str], list[str]]:
        chosen: list[str] = []
        dropped = []
        for name in candidates:
            if total([*chosen, name], at) <= budget_s:
                chosen.append(name)
            else:
                dropped.append(
                    f"task {name}: over budget ({total([*chosen, name], at) / 60:.0f} min with it)"
                )
        return chosen, dropped

    kept_tasks, dropped = choose(kept_targets)
    while not kept_tasks and len(kept_targets) > 1:
        cuts.append(f"target {kept_targets[-1]}: no evaluation task fits with it")
        kept_targets.pop()
        kept_tasks, dropped = choose(kept_targets)
    cuts += dropped
    estimate = estimate_s(pilot, configs, dev, kept_tasks, kept_targets)
    notes = []
    if len(kept_targets) < NEXT_TARGET_TARGETS:
        notes.append(
            f"the next-target experiment needs {NEXT_TARGET_TARGETS} targets; the plan keeps "
            f"{len(kept_targets)}: it runs with experience from 0..{max(0, len(kept_targets) - 1)} other targets"
        )
    if not kept_tasks:
        notes.append("no evaluation task fits the budget: the room report runs, the evaluation cannot")
    return {
        "budget_minutes": budget_minutes,
        "fits": estimate["total_s"] <= budget_s,
        "estimate_minutes": {k.removesuffix("_s"): v / 60.0 for k, v in estimate.items()},
        "eval_tasks": kept_tasks,
        "dev_tasks": dev,
        "targets": kept_targets,
        "primary_target": kept_targets[0] if kept_targets else None,
        "configs": {t: configs[t] for t in (*dev, *kept_tasks)},
        "instances": {t: [i.name for i in tasks[t].instances] for t in (*dev, *kept_tasks)},
        "cuts": cuts,
        "notes": notes,
        "pilot": {
            "seconds_per_config": {f"{t}@{g}": s for (t, g), s in pilot.timing.items()},
            "counter_seconds_per_config": dict(pilot.counters),
            "wall_s": pilot.wall_s,
        },
    }


def plan_lines(plan: Mapping[str, Any]) -> list[str]:
    minutes = plan["estimate_minutes"]
    lines = [
        f"plan: {minutes['total']:.0f} min of {plan['budget_minutes']:.0f} "
        f"(timing A+B {minutes['timing']:.0f}, counters {minutes['counters']:.0f}); fits: {plan['fits']}",
        f"targets: {', '.join(plan['targets']) or '-'} (primary {plan['primary_target']})",
        f"tasks: development {', '.join(plan['dev_tasks']) or '-'}; evaluation {', '.join(plan['eval_tasks']) or '-'}",
    ]
    lines += [f"cut {c}" for c in plan["cuts"]]
    lines += [f"note: {n}" for n in plan["notes"]]
    return lines
