"""Experience: a memoryless run per instance, recorded through the real client as attempts, each from
its parent's measured state (a profile with counters at the timed size)."""

from __future__ import annotations

import hashlib
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence

from kernelgraph.agent.loop import hardware_target
from kernelgraph.agent.proposers.memoryless import MemorylessProposer
from kernelgraph.agent.targets import Target
from kernelgraph.agent.tasks.base import Config, Task
from kernelgraph.bench.landscapes import (
    State,
    config_key,
)
from kernelgraph.bench.study.landscapes import Landscape
from kernelgraph.bench.study.protocol import EXPERIENCE_BUDGET, EXPERIENCE_SEED, label_of
from kernelgraph.bench.study.simulation import Run, simulate
from kernelgraph.client import ExperienceClient
from kernelgraph.core.models import (
    AppliedTransform,
    AttemptRecord,
    KernelVariant,
    Measurement,
    finite_counters,
)
from kernelgraph.core.signature import CounterName, CounterSource


def stable_seed(*parts: str) -> int:
    return int(hashlib.sha256("\0".join(parts).encode()).hexdigest()[:8], 16)


def experience_runs(
    landscapes: Mapping[str, Landscape], instances: Sequence[tuple[str, str]], target: Target
) -> dict[tuple[str, str], Run]:
    """(task, instance) -> the memoryless run of EXPERIENCE_BUDGET attempts on the given landscapes."""
    runs = {}
    for task_name, instance in instances:
        land = landscapes[task_name]
        proposer = MemorylessProposer(seed=EXPERIENCE_SEED + stable_seed(task_name, instance) % 10_000)
        runs[(task_name, instance)] = simulate(land.task, instance, land, proposer, EXPERIENCE_BUDGET, target)
    return runs


def _variant(task: Task, label: str, config: Config) -> KernelVariant:
    return KernelVariant(
        task=label, backend="c", source=task.source("c", config),
        patterns=list(task.patterns)[:8], family=task.family, variant=config_key(config)[:512],
    )  # fmt: skip


def state_measurement(state: State) -> Measurement:
    return Measurement(
        median_ns=state.median_ns, correct=True, counter_source=CounterSource(state.counter_source),
        counters=finite_counters(state.counters),
        tool_versions={k: v[:128] for k, v in state.tool_versions.items()},
        evaluator_version=state.evaluator_version, sandboxed=True,
    )  # fmt: skip


def record_experience(
    client: ExperienceClient,
    runs: Mapping[tuple[str, str], Run],
    tasks: Mapping[str, Task],
    states: Mapping[tuple[str, str, str], State],
    target: Target,
    run_label: str,
    label: Callable[[str, str], str] = label_of,
) -> dict[str, tuple[str, str]]:
    """Record every experience attempt (parent state with its counters, child timed), each instance's
    under its task `label`; returns measurement id -> (task label, config key) of the parent states,
    for the retrieval log."""
    client.upsert_targets([hardware_target(target)])
    parents: dict[str, tuple[str, str]] = {}
    for (task_name, instance), run in runs.items():
        task = tasks[task_name]
        name = label(task_name, instance)
        parent_ids: dict[str, str] = {}
        for n, step in enumerate(run.steps):
            parent_key = config_key(step.parent)
            known = parent_ids.get(parent_key)
            child_ns = step.speedup and states[(task_name, instance, parent_key)].median_ns / step.speedup
            record = AttemptRecord(
                attempt_key=f"{run_label}.{name}.{n}", run_id=f"{run_label}.{name}", agent="memoryless", target=target.name,
                parent_measurement_id=known,
                parent=None if known else _variant(task, name, step.parent),
                parent_measurement=None if known else state_measurement(states[(task_name, instance, parent_key)]),
                transform=AppliedTransform(name=step.transform, params=dict(step.params)),
                child=_variant(task, name, step.child),
                child_measurement=Measurement(
                    median_ns=child_ns, correct=True, counter_source=CounterSource.CPU_TIMING,
                    counters={CounterName.TIME_NS: child_ns}, sandboxed=True,
                    parent_median_ns=states[(task_name, instance, parent_key)].median_ns,
                ) if child_ns else None,
                outcome=step.outcome, speedup=step.speedup,
            )  # fmt: skip
            result = client.record_attempt(record)
            if result.parent_measurement_id:
                parent_ids[parent_key] = result.parent_measurement_id
                parents[result.parent_measurement_id] = (name, parent_key)
    return parents


def needed_states(
    runs: Mapping[tuple[str, str], Run], queries: Iterable[tuple[str, str]], tasks: Mapping[str, Task]
) -> dict[str, list[tuple[str, Config]]]:
    """task -> (instance, config) whose measured state the study needs: every experience parent and
    every query's starting (baseline) state."""
    wanted: dict[str, dict[tuple[str, str], tuple[str, Config]]] = defaultdict(dict)
    for (task_name, instance), run in runs.items():
        for step in run.steps:
            wanted[task_name][(instance, config_key(step.parent))] = (instance, step.parent)
    for task_name, instance in queries:
        base = tasks[task_name].baseline_config
        wanted[task_name][(instance, config_key(base))] = (instance, dict(base))
    return {name: list(found.values()) for name, found in wanted.items()}
