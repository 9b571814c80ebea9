"""Study v2, the thesis measured: does retrieval keyed on a kernel's measured counter signature pick
better transforms than source text, task labels, a global prior, no memory or an autotuner, at matched
budgets, on instances and families never seen? docs/results.md declares the protocol; this module
runs it unchanged.

Everything a run observes comes from measured landscapes (kernelgraph/bench/landscapes.py): every config of
each task timed at each instance, twice (landscapes A and B, measured independently). A run searches
on one landscape and the config it reaches is scored on the other, so a lucky timing cannot make a
run look good. Retrieval goes through the real service on a local Neo4j: the experience is recorded
there as attempts (each from its parent's measured state: a profile with counters at the timed size),
and each evaluation run retrieves once, for the measured state of the kernel it starts from.
"""

from __future__ import annotations

import hashlib
import json
import math
import time
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from kernelgraph.agent.library import Yardsticks
from kernelgraph.agent.loop import DEFAULT_KEEP_THRESHOLD, hardware_target
from kernelgraph.agent.proposers.base import HistoryEntry, ProposalContext, Proposer
from kernelgraph.agent.proposers.experience import ExperienceProposer
from kernelgraph.agent.proposers.memoryless import MemorylessProposer
from kernelgraph.agent.results import CheckResult, CompileResult, Outcome, ProfileResult
from kernelgraph.agent.targets import Target, host_identity
from kernelgraph.agent.tasks import get_task
from kernelgraph.agent.tasks.base import Config, Task, TransformSpec
from kernelgraph.agent.vocabulary import query_vocabulary
from kernelgraph.bench.landscapes import (
    Point,
    State,
    config_key,
    current_key,
    landscape_path,
    landscape_yardsticks,
    measure_states,
    read_landscape,
    read_states,
    space,
    states_path,
)
from kernelgraph.bench.stats import bootstrap_mean_interval, geomean, geomean_of_all, paired, spearman
from kernelgraph.client import ExperienceClient
from kernelgraph.core.models import (
    AppliedTransform,
    AttemptRecord,
    KernelVariant,
    Measurement,
    RetrievalMode,
    RetrieveRequest,
    RetrieveResponse,
    finite_counters,
)
from kernelgraph.core.signature import CounterName, CounterSource

# The protocol (docs/results.md, "Study v2: protocol"). Changing any of these is a new study.
# Six tasks from six families: the ~3 h of machine time the landscapes may take fits these, twice
# over, on 2 cores (stencil2d and rmsnorm have instances too, but were cut, whole, for time).
EVAL_TASKS: tuple[str, ...] = ("matmul", "transpose", "matvec", "softmax", "elementwise_chain", "reduction")
DEV_TASKS: tuple[str, ...] = ("layernorm",)  # the development set: tuned on, never reported
BUDGETS: tuple[int, ...] = (4, 8, 16)
SEEDS: tuple[int, ...] = tuple(range(10))
EXPERIENCE_BUDGET = 16  # attempts of the memoryless run that builds each instance's experience
EXPERIENCE_SEED = 1_000
NEIGHBOURS = (
    5  # k of counters, text and hybrid retrieval (one value for all three): the development set's choice
)
NEIGHBOUR_CHOICES: tuple[int, ...] = (5, 10, 20)  # what the development set may choose k from
TPE_STARTUP = 3  # random trials before TPE models the space
WARM_START_CONFIGS = 3  # configs built from retrieved evidence, enqueued before TPE's own
REPLICATES: tuple[tuple[str, str], ...] = (("A", "B"), ("B", "A"))  # (searched on, scored on)
SPLITS: tuple[str, ...] = ("instance", "family")
PRIMARY_K = 8
SPLIT_TITLES = {"instance": "instances", "family": "families", "development": "development set"}
REACH = 0.9  # "attempts to reach 90% of the oracle"
QUICK_TASKS: tuple[str, ...] = ("matmul", "softmax")


@dataclass(frozen=True)
class Arm:
    name: str
    kind: str  # "memoryless" | "bandit" | "tpe"
    mode: RetrievalMode | None = None  # the evidence it retrieves; None: none
    budget_factor: int = 1  # memoryless@4K spends 4 attempts for every 1 of the others


ARMS: tuple[Arm, ...] = (
    Arm("memoryless", "memoryless"),
    Arm("memoryless@4K", "memoryless", budget_factor=4),
    Arm("bandit-off", "bandit"),
    Arm("global", "bandit", RetrievalMode.GLOBAL),
    Arm("label", "bandit", RetrievalMode.LABEL),
    Arm("text", "bandit", RetrievalMode.TEXT),
    Arm("counters", "bandit", RetrievalMode.COUNTERS),
    Arm("hybrid", "bandit", RetrievalMode.HYBRID),
    Arm("tpe", "tpe"),
    Arm("tpe+counters", "tpe", RetrievalMode.COUNTERS),
)
CONTROLS: tuple[str, ...] = ("text", "label", "tpe", "global", "bandit-off", "memoryless", "memoryless@4K")
RETRIEVAL_MODES: tuple[RetrievalMode, ...] = (
    RetrievalMode.COUNTERS, RetrievalMode.TEXT, RetrievalMode.HYBRID, RetrievalMode.LABEL, RetrievalMode.GLOBAL,
)  # fmt: skip


def label_of(task: str, instance: str) -> str:
    """The task label an instance's experience carries in the graph (one label per instance, so the
    service's `exclude_tasks` holds out an instance or a family)."""
    return f"{task}:{instance}"


# ---------------------------------------------------------------------------------------------------
# Landscapes


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

    # A landscape measured before the task gained knobs stores its configs without them.
    times = {
        (current_key(task, p.config), p.instance): p.median_ns for p in points if p.median_ns is not None
    }
    outcomes = {(current_key(task, p.config), p.instance): p.outcome for p in points}
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


# ---------------------------------------------------------------------------------------------------
# A run, simulated on a landscape: the loop's rules (keep only > DEFAULT_KEEP_THRESHOLD faster), the
# real proposers, the landscape's measured times instead of new measurements.


class LandscapeBackend:
    """A `Backend` that answers from a measured landscape at one instance (nothing is compiled)."""

    name = "c"

    def __init__(self, landscape: Landscape, instance: str) -> None:
        self.landscape, self.instance = landscape, instance
        self.by_source = {landscape.task.source("c", c): c for c in space(landscape.task)}

    def compile(self, task: Task, source: str, target: Target) -> CompileResult:
        return CompileResult(source in self.by_source)

    def check(self, task: Task, source: str, target: Target, seeds: Sequence[int] = ()) -> CheckResult:
        config = self.by_source[source]
        outcome = self.landscape.outcome(config, self.instance)
        return CheckResult(Outcome.KEPT if outcome in (Outcome.KEPT, Outcome.IMPLAUSIBLE) else outcome)

    def profile(
        self, task: Task, source: str, target: Target, parent_source: str | None = None
    ) -> ProfileResult:
        config = self.by_source[source]
        ns = self.landscape.time(config, self.instance)
        parent = self.landscape.time(self.by_source[parent_source], self.instance) if parent_source else None
        if ns is None:
            return ProfileResult(math.nan, math.nan, 0, {}, CounterSource.CPU_TIMING,
                                 outcome=self.landscape.outcome(config, self.instance))  # fmt: skip
        return ProfileResult(ns, 0.0, 1, {CounterName.TIME_NS: ns}, CounterSource.CPU_TIMING, parent)


@dataclass(frozen=True)
class Step:
    parent: Config
    transform: str
    params: Mapping[str, Any]
    child: Config
    outcome: Outcome
    speedup: float | None


@dataclass
class Run:
    """What one run did: the best config (by the searched landscape) after each attempt, and its steps."""

    trajectory: list[str] = field(default_factory=list)
    steps: list[Step] = field(default_factory=list)


def simulate(
    task: Task,
    instance: str,
    landscape: Landscape,
    proposer: Proposer,
    budget: int,
    target: Target,
    start: ProfileResult | None = None,
) -> Run:
    """The optimize loop's rules on a landscape; a run with nothing left to propose keeps its best."""
    backend = LandscapeBackend(landscape, instance)
    current = dict(task.baseline_config)
    current_ns = landscape.baseline_ns(instance)
    tried = {config_key(current)}
    history: list[HistoryEntry] = []
    run = Run()
    for step in range(1, budget + 1):
        context = ProposalContext(
            task=task, backend=backend, target=target, config=current, source=task.source("c", current),
            profile=start, history=tuple(history), step=step, tried=frozenset(tried),
        )  # fmt: skip
        proposal = proposer.propose(context)
        if proposal is None or proposal.config is None:
            run.trajectory.append(config_key(current))
            continue
        child = dict(proposal.config)
        tried.add(config_key(child))
        child_ns = landscape.time(child, instance)
        speedup = current_ns / child_ns if child_ns else None
        if speedup is None:
            outcome = landscape.outcome(child, instance)
            outcome = Outcome.CRASHED if outcome is Outcome.KEPT else outcome
        elif speedup > 1.0 + DEFAULT_KEEP_THRESHOLD:
            outcome = Outcome.KEPT
        else:
            outcome = Outcome.DISCARDED
        run.steps.append(Step(current, proposal.transform, dict(proposal.params), child, outcome, speedup))
        history.append(HistoryEntry(step, proposal.transform, dict(proposal.params), outcome, speedup, child))
        if outcome is Outcome.KEPT and child_ns is not None:
            current, current_ns = child, child_ns
        run.trajectory.append(config_key(current))
    return run


def tpe_run(
    task: Task, instance: str, landscape: Landscape, budget: int, seed: int, warm: Sequence[Config] = ()
) -> Run:
    """Optuna's TPE over the task's knobs at `budget` trials, starting from the measured baseline;
    `warm` configs are tried first. A knob combination outside the config space is mapped to the
    nearest config in it (knobs reset to the baseline's, in order), as a user's wrapper would."""
    import optuna

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    configs = space(task)
    valid = {config_key(c): c for c in configs}
    knobs = sorted(task.baseline_config)
    values = {k: sorted({json.dumps(c[k]) for c in configs}) for k in knobs}
    distributions: dict[str, optuna.distributions.BaseDistribution] = {
        k: optuna.distributions.CategoricalDistribution(values[k]) for k in knobs
    }
    sampler = optuna.samplers.TPESampler(seed=seed, n_startup_trials=TPE_STARTUP)
    study = optuna.create_study(sampler=sampler, direction="minimize")
    for config in warm:
        study.enqueue_trial({k: json.dumps(config[k]) for k in knobs})
    best_key, best_ns = config_key(task.baseline_config), landscape.baseline_ns(instance)
    run = Run()
    for _ in range(budget):
        trial = study.ask(distributions)
        config = _nearest_valid({k: json.loads(trial.params[k]) for k in knobs}, task.baseline_config, valid)
        ns = landscape.time(config, instance)
        study.tell(trial, math.log(ns) if ns else math.log(landscape.baseline_ns(instance)) + 1.0)
        if ns is not None and ns < best_ns:
            best_key, best_ns = config_key(config), ns
        run.trajectory.append(best_key)
    return run


def _nearest_valid(config: dict[str, Any], baseline: Config, valid: Mapping[str, Config]) -> Config:
    if config_key(config) in valid:
        return config
    candidate = dict(config)
    for knob in sorted(config):
        candidate[knob] = baseline[knob]
        if config_key(candidate) in valid:
            return candidate
    return dict(baseline)


def warm_start(
    task: Task, response: RetrieveResponse | None, limit: int = WARM_START_CONFIGS
) -> list[Config]:
    """Configs built from retrieved evidence: the baseline with the best-scored transforms applied one
    after another, each at its best-evidenced setting (config 1: the top transform, 2: the top two...)."""
    if response is None:
        return []
    specs = {s.name: s for s in task.transforms}
    config: Config = dict(task.baseline_config)
    built: list[Config] = []
    for row in sorted(response.transforms, key=lambda r: -r.score):
        if row.score <= 0 or row.transform not in specs or len(built) >= limit:
            continue
        settings = [dict(p.params) for p in sorted(row.by_params, key=lambda p: -p.weighted_log_speedup)]
        for params in settings or [{}]:
            new = specs[row.transform].apply(config, params)
            if new is not None:
                config = new
                built.append(dict(config))
                break
    return built


class FixedEvidence:
    """An `ExperienceClient` for one evaluation run: the evidence retrieved once, for the state the run
    starts from, returned at every step (nothing is written: evaluation runs never learn from each other)."""

    def __init__(self, response: RetrieveResponse) -> None:
        self.response = response

    def retrieve(self, request: RetrieveRequest | dict[str, Any]) -> RetrieveResponse:
        return self.response

    def __getattr__(self, name: str) -> Any:
        raise AttributeError(f"an evaluation run does not {name}")


def empty_response(target: str, mode: RetrievalMode) -> RetrieveResponse:
    from kernelgraph.service.retrieval import FAILURE_LOG_SPEEDUP, PRIOR_WEIGHT

    return RetrieveResponse(
        mode=mode, target=target, signature=None, neighbours=0, neighbour_ids=[], transforms=[],
        failure_log_speedup=FAILURE_LOG_SPEEDUP, prior_weight=PRIOR_WEIGHT,
    )  # fmt: skip


# ---------------------------------------------------------------------------------------------------
# Experience: a memoryless run per instance, recorded through the real client.


def _stable_seed(*parts: str) -> int:
    return int(hashlib.sha256("\0".join(parts).encode()).hexdigest()[:8], 16)


def experience_runs(
    landscapes: Mapping[str, Landscape], instances: Sequence[tuple[str, str]], target: Target
) -> dict[tuple[str, str], Run]:
    """(task, instance) -> the memoryless run of EXPERIENCE_BUDGET attempts on the given landscapes."""
    runs = {}
    for task_name, instance in instances:
        land = landscapes[task_name]
        proposer = MemorylessProposer(seed=EXPERIENCE_SEED + _stable_seed(task_name, instance) % 10_000)
        runs[(task_name, instance)] = simulate(land.task, instance, land, proposer, EXPERIENCE_BUDGET, target)
    return runs


def _variant(task: Task, instance: str, config: Config) -> KernelVariant:
    return KernelVariant(
        task=label_of(task.name, instance), backend="c", source=task.source("c", config),
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
) -> dict[str, tuple[str, str]]:
    """Record every experience attempt (parent state with its counters, child timed); returns
    measurement id -> (task label, config key) of the parent states, for the retrieval log."""
    client.upsert_targets([hardware_target(target)])
    parents: dict[str, tuple[str, str]] = {}
    for (task_name, instance), run in runs.items():
        task = tasks[task_name]
        parent_ids: dict[str, str] = {}
        for n, step in enumerate(run.steps):
            parent_key = config_key(step.parent)
            known = parent_ids.get(parent_key)
            child_ns = step.speedup and states[(task_name, instance, parent_key)].median_ns / step.speedup
            record = AttemptRecord(
                attempt_key=f"{run_label}.{label_of(task_name, instance)}.{n}",
                run_id=f"{run_label}.{label_of(task_name, instance)}", agent="memoryless", target=target.name,
                parent_measurement_id=known,
                parent=None if known else _variant(task, instance, step.parent),
                parent_measurement=None if known else state_measurement(states[(task_name, instance, parent_key)]),
                transform=AppliedTransform(name=step.transform, params=dict(step.params)),
                child=_variant(task, instance, step.child),
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
                parents[result.parent_measurement_id] = (label_of(task_name, instance), parent_key)
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


# ---------------------------------------------------------------------------------------------------
# Evaluation


@dataclass(frozen=True)
class Unit:
    """One evaluated instance under one split and one replicate."""

    split: str
    searched: str
    scored: str
    task: str
    instance: str


def exclusions(unit: Unit, tasks: Mapping[str, Task]) -> list[str]:
    if unit.split in ("instance", "development"):  # the development set is never in the graph
        return [label_of(unit.task, unit.instance)]
    family = tasks[unit.task].family
    return [label_of(t.name, i.name) for t in tasks.values() if t.family == family for i in t.instances]


def label_tasks(unit: Unit, tasks: Mapping[str, Task]) -> list[str]:
    """Label retrieval: the other instances of the same task, else the same family's (none left when
    the whole family is held out: the arm then has no evidence)."""
    excluded = set(exclusions(unit, tasks))
    same_task = [label_of(unit.task, i.name) for i in tasks[unit.task].instances]
    family = tasks[unit.task].family
    same_family = [
        label_of(t.name, i.name) for t in tasks.values() if t.family == family for i in t.instances
    ]
    for labels in (same_task, same_family):
        kept = [x for x in labels if x not in excluded]
        if kept:
            return kept
    return []


def retrieve_for(
    client: ExperienceClient,
    unit: Unit,
    mode: RetrievalMode,
    tasks: Mapping[str, Task],
    start: State,
    target: Target,
    k: int,
) -> RetrieveResponse:
    task = tasks[unit.task]
    request: dict[str, Any] = {
        "target": target.name, "mode": mode, "k": k, "limit": 20, "exclude_tasks": exclusions(unit, tasks),
        "transforms": query_vocabulary(task),  # as the product's proposers send it
    }  # fmt: skip
    if mode in (RetrievalMode.COUNTERS, RetrievalMode.HYBRID):
        request.update(counters=dict(start.counters), counter_source=start.counter_source)
    if mode in (RetrievalMode.TEXT, RetrievalMode.HYBRID):
        request["source"] = task.source("c", task.baseline_config)
    if mode is RetrievalMode.LABEL:
        labels = label_tasks(unit, tasks)
        if not labels:
            return empty_response(target.name, mode)
        request["tasks"] = labels
    return client.retrieve(RetrieveRequest.model_validate(request))


def start_profile(state: State) -> ProfileResult:
    return ProfileResult(
        state.median_ns, 0.0, 1, dict(state.counters), CounterSource(state.counter_source),
        evaluator_version=state.evaluator_version,
    )  # fmt: skip


def arm_run(
    arm: Arm,
    unit: Unit,
    seed: int,
    land: Landscape,
    responses: Mapping[RetrievalMode, RetrieveResponse],
    start: State,
    target: Target,
    budget: int,
) -> Run:
    task = land.task
    run_seed = _stable_seed(arm.name, unit.split, unit.searched, unit.task, unit.instance, str(seed))
    if arm.kind == "tpe":
        warm = warm_start(task, responses.get(arm.mode)) if arm.mode else []
        return tpe_run(task, unit.instance, land, budget * arm.budget_factor, run_seed, warm)
    proposer: Proposer
    if arm.kind == "memoryless":
        proposer = MemorylessProposer(seed=run_seed)
    else:
        response = responses[arm.mode] if arm.mode else empty_response(target.name, RetrievalMode.COUNTERS)
        proposer = ExperienceProposer(
            FixedEvidence(response),
            mode=arm.mode or RetrievalMode.COUNTERS,
            seed=run_seed,
        )
    return simulate(
        task, unit.instance, land, proposer, budget * arm.budget_factor, target, start_profile(start)
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


def curve(scored: Landscape, instance: str, run: Run) -> list[float]:
    return [score(scored, instance, key).fraction for key in run.trajectory]


def attempts_to_reach(fractions: Sequence[float], level: float = REACH) -> int | None:
    for n, value in enumerate(fractions, start=1):
        if value >= level:
            return n
    return None


# ---------------------------------------------------------------------------------------------------
# The study


@dataclass
class StudyPlan:
    eval_tasks: tuple[str, ...] = EVAL_TASKS
    dev_tasks: tuple[str, ...] = DEV_TASKS
    budgets: tuple[int, ...] = BUDGETS
    seeds: tuple[int, ...] = SEEDS
    arms: tuple[Arm, ...] = ARMS
    splits: tuple[str, ...] = SPLITS
    replicates: tuple[tuple[str, str], ...] = REPLICATES
    neighbours: int = NEIGHBOURS
    instances: Mapping[str, tuple[str, ...]] | None = None  # task -> instances (None: all)

    def chosen(self, task: Task) -> list[str]:
        names = [i.name for i in task.instances]
        if self.instances and task.name in self.instances:
            names = [n for n in names if n in self.instances[task.name]]
        return names


def run_study(
    knowledge: Any,
    plan: StudyPlan,
    target: Target,
    landscape_dir: Path,
    *,
    namespace: str,
    console: Console | None = None,
    development: bool = False,
    log: Callable[[dict[str, Any]], None] | None = None,
) -> dict[str, Any]:
    """Build experience, retrieve, run every arm and score it; `development` evaluates the dev tasks
    (for tuning) with experience from the evaluation tasks. Returns the report (JSON-ready)."""
    from kernelgraph.service.inprocess import InProcessClient

    started = time.monotonic()
    console = console or Console(stderr=True)
    tasks = {name: get_task(name) for name in (*plan.eval_tasks, *plan.dev_tasks)}
    query_tasks = plan.dev_tasks if development else plan.eval_tasks
    lands = {
        label: {name: load_landscape(landscape_dir, label, task) for name, task in tasks.items()}
        for label in {x for pair in plan.replicates for x in pair}
    }
    # The tasks as their landscapes measured them (the spaces and sizes of that day).
    first = lands[plan.replicates[0][0]]
    tasks = {name: first[name].task for name in tasks}
    exp_tasks = {name: tasks[name] for name in plan.eval_tasks}
    exp_instances = [(t, i) for t in plan.eval_tasks for i in plan.chosen(tasks[t])]
    queries = [(t, i) for t in query_tasks for i in plan.chosen(tasks[t])]

    runs_by_label = {
        searched: experience_runs(lands[searched], exp_instances, target) for searched, _ in plan.replicates
    }
    wanted: dict[str, list[tuple[str, Config]]] = defaultdict(list)
    for runs in runs_by_label.values():
        for name, items in needed_states(runs, queries, tasks).items():
            wanted[name].extend(items)
    columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
    with Progress(*columns, console=console) as progress:
        for name, items in wanted.items():
            measure_states(tasks[name], target, items, landscape_dir, progress=progress)
    states = read_states(states_path(landscape_dir))

    report_units: list[dict[str, Any]] = []
    retrievals: list[dict[str, Any]] = []
    for searched, scored_label in plan.replicates:
        client = InProcessClient(knowledge, f"{namespace}-{searched.lower()}")
        console.print(f"[bold]experience[/] searched on {searched}: {len(exp_instances)} instances x "
                      f"{EXPERIENCE_BUDGET} attempts -> namespace {client.namespace}")  # fmt: skip
        parents = record_experience(
            client, runs_by_label[searched], exp_tasks, states, target, f"{namespace}-{searched}"
        )
        knowledge.embed_pending([client.namespace])
        units = [Unit(s, searched, scored_label, t, i) for s in plan.splits for t, i in queries]
        if development:
            units = [Unit("development", searched, scored_label, t, i) for t, i in queries]
        with Progress(*columns, console=console) as progress:
            bar = progress.add_task(f"arms on {searched} -> scored on {scored_label}", total=len(units))
            for unit in units:
                land, scored = lands[searched][unit.task], lands[scored_label][unit.task]
                start = states[(unit.task, unit.instance, config_key(tasks[unit.task].baseline_config))]
                responses = {
                    mode: retrieve_for(client, unit, mode, tasks, start, target, plan.neighbours)
                    for mode in RETRIEVAL_MODES
                    if any(a.mode is mode for a in plan.arms)
                }
                for mode, response in responses.items():
                    entry = {
                        "split": unit.split, "searched": searched, "task": unit.task, "instance": unit.instance,
                        "mode": mode.value, "signature": response.signature,
                        "neighbours": [
                            {"label": parents.get(m, ("?", ""))[0], "config": parents.get(m, ("", "?"))[1],
                             "similarity": s}
                            for m, s in zip(response.neighbour_ids, response.neighbour_scores, strict=False)
                        ],
                        "transforms": [{"transform": r.transform, "score": r.score} for r in response.transforms],
                    }  # fmt: skip
                    retrievals.append(entry)
                    if log:
                        log(entry)
                budget = max(plan.budgets)
                for arm in plan.arms:
                    for seed in plan.seeds:
                        run = arm_run(arm, unit, seed, land, responses, start, target, budget)
                        marks = [beside(scored, unit.instance, k, target) for k in run.trajectory]
                        report_units.append({
                            "split": unit.split, "searched": searched, "scored": scored_label,
                            "task": unit.task, "instance": unit.instance, "arm": arm.name, "seed": seed,
                            "curve": curve(scored, unit.instance, run),
                            "speedups": [score(scored, unit.instance, k).speedup for k in run.trajectory],
                            # after each attempt, beside the library and the roofline (agent/library.py)
                            "speedups_vs_library": [m.speedup_vs_library for m in marks],
                            "roofline_fractions": [m.roofline_fraction for m in marks],
                            "yardsticks": marks[-1].to_json() if marks else None,  # the config reached
                        })  # fmt: skip
                progress.advance(bar)
    summary = summarize(report_units, plan)
    return {
        "generated_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "host": host_identity(),
        "target": target.name,
        "development": development,
        "protocol": protocol_of(plan),
        "landscapes": landscape_summary(lands, tasks, plan, target),
        "summary": summary,
        "runs": report_units,
        "retrievals": len(retrievals),
        "wall_s": time.monotonic() - started,
    }


def protocol_of(plan: StudyPlan) -> dict[str, Any]:
    return {
        "eval_tasks": list(plan.eval_tasks), "dev_tasks": list(plan.dev_tasks), "budgets": list(plan.budgets),
        "seeds": len(plan.seeds), "arms": [a.name for a in plan.arms], "splits": list(plan.splits),
        "replicates": [list(r) for r in plan.replicates], "neighbours": plan.neighbours,
        "experience_budget": EXPERIENCE_BUDGET, "tpe_startup": TPE_STARTUP, "keep_threshold": DEFAULT_KEEP_THRESHOLD,
        "primary_k": PRIMARY_K, "instances": dict(plan.instances) if plan.instances else None,
    }  # fmt: skip


def at_budget(row: Mapping[str, Any], k: int, factor: int) -> tuple[float, float]:
    n = min(k * factor, len(row["curve"])) - 1
    return row["curve"][n], row["speedups"][n]


def vs_library_at_budget(row: Mapping[str, Any], k: int, factor: int) -> float | None:
    """The speedup over the library of the config reached after `k` attempts (None: no library figure)."""
    values = row.get("speedups_vs_library") or [None]
    return values[min(k * factor, len(values)) - 1]


def summarize(rows: Sequence[Mapping[str, Any]], plan: StudyPlan) -> dict[str, Any]:
    """Per split, arm and K: mean fraction of the oracle, geomean speedup, attempts to 90%; paired
    per-instance ratios of counters (and hybrid) against every control."""
    factor = {a.name: a.budget_factor for a in plan.arms}
    out: dict[str, Any] = {}
    for split in sorted({r["split"] for r in rows}):
        in_split = [r for r in rows if r["split"] == split]
        per: dict[str, Any] = {}
        # instance key -> arm -> K -> list of fractions over seeds and replicates
        fractions: dict[str, dict[str, dict[int, list[float]]]] = defaultdict(
            lambda: defaultdict(lambda: defaultdict(list))
        )
        speedups: dict[str, dict[int, list[float]]] = defaultdict(lambda: defaultdict(list))
        vs_library: dict[str, dict[int, list[float | None]]] = defaultdict(lambda: defaultdict(list))
        reach: dict[str, list[int | None]] = defaultdict(list)
        curves: dict[str, list[list[float]]] = defaultdict(list)
        for r in in_split:
            key = label_of(r["task"], r["instance"])
            for k in plan.budgets:
                f, s = at_budget(r, k, factor[r["arm"]])
                fractions[key][r["arm"]][k].append(f)
                speedups[r["arm"]][k].append(s)
                vs_library[r["arm"]][k].append(vs_library_at_budget(r, k, factor[r["arm"]]))
            reach[r["arm"]].append(attempts_to_reach(r["curve"]))
            curves[r["arm"]].append(r["curve"])
        instance_means = {
            arm.name: {k: {inst: float(np.mean(fractions[inst][arm.name][k])) for inst in fractions} for k in plan.budgets}
            for arm in plan.arms
        }  # fmt: skip
        for arm in plan.arms:
            got = [x for x in reach[arm.name]]
            per[arm.name] = {
                "fraction_of_oracle": {str(k): float(np.mean(list(instance_means[arm.name][k].values()))) for k in plan.budgets},
                "geomean_speedup": {str(k): geomean(speedups[arm.name][k]) for k in plan.budgets},
                # over the library call; None unless every run has a library figure
                "geomean_speedup_vs_library": {str(k): geomean_of_all(vs_library[arm.name][k]) for k in plan.budgets},
                "attempts_to_90pct_median": _median_reach(got),
                "runs_reaching_90pct": sum(x is not None for x in got) / max(1, len(got)),
                "curve": _curve_band(curves[arm.name], instance_keys=[label_of(r["task"], r["instance"]) for r in in_split if r["arm"] == arm.name]),
            }  # fmt: skip
        comparisons: dict[str, Any] = {}
        for lead in ("counters", "hybrid"):
            if lead not in instance_means:
                continue
            for control in CONTROLS:
                if control not in instance_means:
                    continue
                for k in plan.budgets:
                    comparisons[f"{lead}@{k} vs {control}@{k}"] = paired(
                        instance_means[lead][k], instance_means[control][k]
                    )
        if "memoryless@4K" in instance_means:
            k = PRIMARY_K if PRIMARY_K in plan.budgets else plan.budgets[-1]  # --quick runs K=4 only
            for lead in ("counters", "hybrid"):
                if lead in instance_means:
                    comparisons[f"{lead}@{k} vs memoryless@{4 * k}"] = paired(
                        instance_means[lead][k], instance_means["memoryless@4K"][k]
                    )
        out[split] = {"arms": per, "comparisons": comparisons, "instance_means": {
            a: {str(k): v for k, v in ks.items()} for a, ks in instance_means.items()}}  # fmt: skip
    return out


def _median_reach(values: Sequence[int | None]) -> float | None:
    reached = sorted(v for v in values if v is not None)
    return float(np.median(reached)) if reached else None


def _curve_band(curves: Sequence[Sequence[float]], instance_keys: Sequence[str]) -> dict[str, list[float]]:
    """Mean fraction of the oracle after each attempt, and a 95% bootstrap band over instances."""
    if not curves:
        return {"mean": [], "low": [], "high": []}
    length = min(len(c) for c in curves)
    by_instance: dict[str, list[Sequence[float]]] = defaultdict(list)
    for key, c in zip(instance_keys, curves, strict=True):
        by_instance[key].append(c[:length])
    matrix = np.asarray([np.mean(np.asarray(v), axis=0) for v in by_instance.values()])
    low, high = bootstrap_mean_interval(matrix, resamples=2000, seed=11)
    return {"mean": matrix.mean(axis=0).tolist(), "low": low.tolist(), "high": high.tolist()}


def landscape_summary(
    lands: Mapping[str, Mapping[str, Landscape]], tasks: Mapping[str, Task], plan: StudyPlan, target: Target
) -> dict[str, Any]:
    """Per task: each instance's best config in each landscape (beside the naive baseline, the library
    call and the roofline of `target`), how far the best of one instance is from the oracle of
    another, and the agreement of the two landscapes (noise shown, not assumed)."""
    out: dict[str, Any] = {}
    labels = sorted(lands)
    for name in (*plan.eval_tasks, *plan.dev_tasks):
        task = tasks[name]
        instances = plan.chosen(task)
        entry: dict[str, Any] = {"family": task.family, "configs": len(space(task)), "instances": {}}
        for label in labels:
            land = lands[label][name]
            entry[f"host_{label}"] = land.header.get("host")
            entry[f"started_{label}"] = land.header.get("started_at")
            loads = [p.load_average[0] for p in land.points]
            entry[f"load_{label}"] = [min(loads), float(np.median(loads)), max(loads)] if loads else None
        for inst in instances:
            per: dict[str, Any] = {}
            for label in labels:
                land = lands[label][name]
                best_key, best_ns = land.oracle(inst)
                per[label] = {"best": best_key, "best_ns": best_ns, "baseline_ns": land.baseline_ns(inst),
                              "oracle_speedup": land.baseline_ns(inst) / best_ns,
                              "yardsticks": beside(land, inst, best_key, target).to_json()}  # fmt: skip
            # The best config of each other instance, at this instance (landscape A), as a fraction of the oracle.
            a = lands[labels[0]][name]
            per["others_best_here"] = {
                other: a.oracle(inst)[1] / (a.time(a.oracle(other)[0], inst) or math.inf)
                for other in instances if other != inst
            }  # fmt: skip
            # Agreement of the two landscapes at this instance: Spearman of config times, and the fraction
            # of B's oracle reached by A's best.
            if len(labels) == 2:
                la, lb = (lands[x][name] for x in labels)
                keys = [k for (k, i) in la.times if i == inst and (k, inst) in lb.times]
                xa = np.asarray([la.times[(k, inst)] for k in keys])
                xb = np.asarray([lb.times[(k, inst)] for k in keys])
                per["landscape_rank_correlation"] = spearman(xa, xb)
                per["a_best_on_b"] = lb.oracle(inst)[1] / (lb.time(la.oracle(inst)[0], inst) or math.inf)
                per["median_abs_log_ratio_ab"] = float(np.median(np.abs(np.log(xa / xb)))) if keys else None
            entry["instances"][inst] = per
        entry["best_differs"] = any(
            v < REACH for per in entry["instances"].values() for v in per["others_best_here"].values()
        )
        out[name] = entry
    return out


def choose_neighbours(dev_report: Mapping[str, Any]) -> int:
    """The development set's choice of k: best counters@PRIMARY_K fraction of the oracle (ties: smaller k)."""
    scores = {int(k): v for k, v in dev_report.items()}
    return max(sorted(scores), key=lambda k: scores[k])


# ---------------------------------------------------------------------------------------------------
# Plots and the generated results page


def plot_curves(report: Mapping[str, Any], path: Path) -> None:
    """Fraction of the oracle against attempts, one panel per split, a 95% band over instances per arm."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    splits = list(report["summary"])
    fig, axes = plt.subplots(1, len(splits), figsize=(7 * len(splits), 5), squeeze=False)
    for ax, split in zip(axes[0], splits, strict=True):
        for name, arm in report["summary"][split]["arms"].items():
            band = arm["curve"]
            limit = max(report["protocol"]["budgets"]) * (4 if name == "memoryless@4K" else 1)
            xs = list(range(1, min(limit, len(band["mean"])) + 1))
            style = {"linestyle": "--"} if name.startswith(("memoryless", "tpe")) else {}
            width = 2.5 if name == "counters" else 1.3
            (line,) = ax.plot(xs, band["mean"][: len(xs)], label=name, linewidth=width, **style)
            ax.fill_between(
                xs, band["low"][: len(xs)], band["high"][: len(xs)], color=line.get_color(), alpha=0.12
            )
        for k in report["protocol"]["budgets"]:
            ax.axvline(k, color="grey", linestyle=":", linewidth=0.8)
        ax.set_xscale("log", base=2)
        ax.set_xlabel("attempts")
        ax.set_ylabel("fraction of the oracle reached (scored on the other landscape)")
        ax.set_title(f"held out: {SPLIT_TITLES.get(split, split)}")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8, loc="lower right")
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)


def plot_heatmap(
    report: Mapping[str, Any], path: Path, lead: str = "counters", control: str = "text"
) -> None:
    """Per instance and K, the paired ratio lead/control of the mean fraction of the oracle."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    splits = list(report["summary"])
    budgets = report["protocol"]["budgets"]
    fig, axes = plt.subplots(
        1, len(splits), figsize=(4 + 2 * len(splits) * len(budgets) / 3, 9), squeeze=False
    )
    for ax, split in zip(axes[0], splits, strict=True):
        means = report["summary"][split]["instance_means"]
        instances = sorted(means[lead][str(budgets[0])])
        data = np.asarray(
            [[means[lead][str(k)][i] / means[control][str(k)][i] for k in budgets] for i in instances]
        )
        image = ax.imshow(np.log2(data), cmap="RdBu", vmin=-1, vmax=1, aspect="auto")
        ax.set_xticks(range(len(budgets)), [f"K={k}" for k in budgets])
        ax.set_yticks(range(len(instances)), instances if ax is axes[0][0] else [], fontsize=7)
        for (row, col), value in np.ndenumerate(data):
            ax.text(col, row, f"{value:.2f}", ha="center", va="center", fontsize=6)
        ax.set_title(f"{lead}/{control}, held out: {SPLIT_TITLES.get(split, split)}", fontsize=9)
    fig.colorbar(image, ax=axes[0].tolist(), label="log2 ratio of fractions of the oracle")
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110, bbox_inches="tight")
    plt.close(fig)


def _times(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}x"


def _percent(value: float | None) -> str:
    return "-" if value is None else f"{100 * value:.1f}%"


def _fmt_ci(c: Mapping[str, Any]) -> str:
    return f"{c['ratio']:.3f} [{c['ci'][0]:.3f}, {c['ci'][1]:.3f}]"


def results_markdown(report: Mapping[str, Any], command: str, images: Mapping[str, str]) -> str:
    """The generated half of the study's results (docs/study-results.md); docs/results.md reads it."""
    lines = [
        "# Study v2: generated results",
        "",
        f"Generated by `{command}` on {report['generated_at']} ({report['host']}, target `{report['target']}`), "
        f"in {report['wall_s']:.0f} s. The protocol is declared in [results.md](results.md); nothing here was tuned "
        "on these instances.",
        "",
        f"![fraction of the oracle against attempts]({images['curves']})",
        "",
        f"![counters/text per instance]({images['heatmap']})",
        "",
    ]
    for split, data in report["summary"].items():
        budgets = report["protocol"]["budgets"]
        lines += [f"## Held out: {SPLIT_TITLES.get(split, split)}", "", "| arm | " + " | ".join(f"fraction of oracle @{k}" for k in budgets)
                  + " | " + " | ".join(f"geomean speedup @{k}" for k in budgets)
                  + " | " + " | ".join(f"vs library @{k}" for k in budgets) + " | attempts to 90% (median) | runs reaching 90% |",
                  "|---|" + "---|" * (3 * len(budgets) + 2)]  # fmt: skip
        for name, arm in data["arms"].items():
            reach = arm["attempts_to_90pct_median"]
            lines.append(
                f"| {name} | " + " | ".join(f"{arm['fraction_of_oracle'][str(k)]:.3f}" for k in budgets) + " | "
                + " | ".join(f"{arm['geomean_speedup'][str(k)]:.2f}x" for k in budgets) + " | "
                + " | ".join(_times(arm.get("geomean_speedup_vs_library", {}).get(str(k))) for k in budgets)
                + f" | {reach if reach is not None else 'never'} | {arm['runs_reaching_90pct']:.0%} |"
            )  # fmt: skip
        lines += ["", "Paired per-instance ratios of the mean fraction of the oracle (geomean, 95% bootstrap CI over "
                  "instances; one-sided Wilcoxon signed-rank p, H1: lead > control):", "",
                  "| comparison | ratio [95% CI] | wins / losses / ties | p |", "|---|---|---|---|"]  # fmt: skip
        for name, c in data["comparisons"].items():
            lines.append(
                f"| {name} | {_fmt_ci(c)} | {c['wins']} / {c['losses']} / {c['ties']} | {c['p_one_sided']:.3g} |"
            )
        lines.append("")
    lines += ["## Landscapes", "", "| task | instance | regime | best config (A) | oracle speedup A / B | "
              "A's best vs library | A's best, roofline | A's best on B | rank corr. A~B | "
              "others' best here (fraction of oracle) |", "|---|---|---|---|---|---|---|---|---|---|"]  # fmt: skip
    for name, entry in report["landscapes"].items():
        task = get_task(name)
        regimes = {i.name: i.regime for i in task.instances}
        for inst, per in entry["instances"].items():
            others = ", ".join(f"{o}: {v:.2f}" for o, v in per["others_best_here"].items())
            corr = per.get("landscape_rank_correlation")
            lines.append(
                f"| {name} | {inst} | {regimes.get(inst, '')} | `{per['A']['best']}` | "
                f"{per['A']['oracle_speedup']:.2f}x / {per['B']['oracle_speedup']:.2f}x | "
                f"{_times((per['A'].get('yardsticks') or {}).get('speedup_vs_library'))} | "
                f"{_percent((per['A'].get('yardsticks') or {}).get('roofline_fraction'))} | "
                f"{per.get('a_best_on_b', math.nan):.2f} | {corr if corr is None else f'{corr:.2f}'} | {others} |"
            )
    differs = [n for n, e in report["landscapes"].items() if e["best_differs"]]
    lines += ["", f"Tasks whose best config differs between instances (another instance's best reaches < {REACH:.0%} "
              f"of the oracle): {len(differs)} of {len(report['landscapes'])} ({', '.join(differs)}).", ""]  # fmt: skip
    return "\n".join(lines)


# ---------------------------------------------------------------------------------------------------
# The controlled mechanism check (`--quick`): a test of the mechanism, never evidence for the claim.

MECHANISM_PAIR: tuple[str, str, str] = ("softmax", "16x256", "1024x1024")  # task, L1 instance, LLC instance


def mechanism(
    knowledge: Any, target: Target, landscape_dir: Path, namespace: str, label: str = "A"
) -> dict[str, Any]:
    """Two instances of one task (same source) whose best configs differ: with experience from both in
    the graph, counters retrieval for each instance's measured state finds that instance's own state
    first, while text retrieval scores the two alike and cannot tell them apart."""
    from kernelgraph.service.inprocess import InProcessClient

    task_name, small, large = MECHANISM_PAIR
    task = get_task(task_name)
    land = load_landscape(landscape_dir, label, task)
    runs = experience_runs({task_name: land}, [(task_name, small), (task_name, large)], target)
    states = read_states(states_path(landscape_dir))
    for name, items in needed_states(
        runs, [(task_name, small), (task_name, large)], {task_name: task}
    ).items():
        states.update(measure_states(get_task(name), target, items, landscape_dir))
    client = InProcessClient(knowledge, namespace)
    record_experience(client, runs, {task_name: task}, states, target, namespace)
    knowledge.embed_pending([namespace])
    out: dict[str, Any] = {
        "task": task_name,
        "instances": [small, large],
        "best": {},
        "counters": {},
        "text": {},
    }
    base = config_key(task.baseline_config)
    for instance in (small, large):
        out["best"][instance] = land.oracle(instance)[0]
        start = states[(task_name, instance, base)]
        for mode in (RetrievalMode.COUNTERS, RetrievalMode.TEXT):
            request: dict[str, Any] = {
                "target": target.name, "mode": mode, "k": 2, "limit": 20, "transforms": query_vocabulary(task),
            }  # fmt: skip
            if mode is RetrievalMode.COUNTERS:
                request.update(counters=dict(start.counters), counter_source=start.counter_source)
            else:
                request["source"] = task.source("c", task.baseline_config)
            response = client.retrieve(RetrieveRequest.model_validate(request))
            labels = _neighbour_labels(knowledge, namespace, response.neighbour_ids)
            out[mode.value][instance] = {
                "neighbours": [{"label": x, "similarity": s} for x, s in zip(labels, response.neighbour_scores, strict=True)],
                "top_transform": response.transforms[0].transform if response.transforms else None,
            }  # fmt: skip
    counters_right = all(
        out["counters"][i]["neighbours"][0]["label"] == label_of(task_name, i) for i in (small, large)
    )
    text_tied = all(
        len(out["text"][i]["neighbours"]) == 2
        and abs(out["text"][i]["neighbours"][0]["similarity"] - out["text"][i]["neighbours"][1]["similarity"]) < 1e-6
        for i in (small, large)
    )  # fmt: skip
    out["best_differs"] = out["best"][small] != out["best"][large]
    out["counters_pick_own_instance"] = counters_right
    out["text_cannot_tell"] = text_tied
    return out


def _neighbour_labels(knowledge: Any, namespace: str, measurement_ids: Sequence[str]) -> list[str]:
    rows = knowledge.store.read(
        "measurements_by_id", namespace=namespace, measurement_ids=list(measurement_ids)
    )
    by_id = {r["measurement_id"]: r["task"] for r in rows}
    return [by_id.get(m, "?") for m in measurement_ids]


# ---------------------------------------------------------------------------------------------------
# The declared success criteria, judged on a report


def verdicts(report: Mapping[str, Any], split: str = "instance") -> dict[str, dict[str, Any]]:
    """The protocol's success criteria (docs/results.md) on `split`: met or not, with the numbers."""
    comparisons = report["summary"][split]["comparisons"]
    k = PRIMARY_K
    out: dict[str, dict[str, Any]] = {}
    for control in ("text", "label", "tpe"):
        c = comparisons[f"counters@{k} vs {control}@{k}"]
        out[f"counters@{k} beats {control}@{k}"] = {"met": c["ci"][0] > 1.0, "ratio": c["ratio"], "ci": c["ci"],
                                                   "p": c["p_one_sided"]}  # fmt: skip
    c = comparisons[f"counters@{k} vs memoryless@{4 * k}"]
    out[f"counters@{k} reaches memoryless@{4 * k}"] = {"met": c["ratio"] >= 1.0, "ratio": c["ratio"], "ci": c["ci"],
                                                       "p": c["p_one_sided"]}  # fmt: skip
    return out


def headline(report: Mapping[str, Any]) -> list[str]:
    """What `make demo` prints of the committed study: fractions of the oracle at K=8 and the verdicts."""
    arms = report["summary"]["instance"]["arms"]
    k = str(PRIMARY_K)
    shown = ("counters", "text", "label", "tpe", "memoryless")
    lines = [
        "held-out instances, fraction of the oracle at K=8: "
        + ", ".join(f"{a} {arms[a]['fraction_of_oracle'][k]:.3f}" for a in shown if a in arms)
        + f", memoryless@32 {arms['memoryless@4K']['fraction_of_oracle'][k]:.3f}"
    ]
    for name, v in verdicts(report).items():
        lines.append(
            f"{name}: {'met' if v['met'] else 'NOT met'} (paired ratio {v['ratio']:.3f}, "
            f"95% CI [{v['ci'][0]:.3f}, {v['ci'][1]:.3f}])"
        )
    return lines
