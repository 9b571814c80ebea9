"""A run, simulated on a landscape: the loop's rules (keep only > DEFAULT_KEEP_THRESHOLD faster), the
real proposers (or Optuna's TPE), the landscape's measured times instead of new measurements."""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from kernelgraph.agent.loop import DEFAULT_KEEP_THRESHOLD
from kernelgraph.agent.proposers.base import HistoryEntry, ProposalContext, Proposer
from kernelgraph.agent.results import CheckResult, CompileResult, Outcome, ProfileResult
from kernelgraph.agent.targets import Target
from kernelgraph.agent.tasks.base import Config, Task
from kernelgraph.bench.landscapes import (
    config_key,
    space,
)
from kernelgraph.bench.study.landscapes import Landscape, score
from kernelgraph.bench.study.protocol import TPE_STARTUP
from kernelgraph.core.signature import CounterName, CounterSource


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
        self, task: Task, source: str, target: Target, parent_source: str | None = None,
        reference_source: str | None = None,
    ) -> ProfileResult:  # fmt: skip
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
    state_of: Callable[[Config], ProfileResult | None] | None = None,
) -> Run:
    """The optimize loop's rules on a landscape; a run with nothing left to propose keeps its best.
    Each step's proposal sees `start` as the current kernel's profile, or with `state_of` (study v3's
    per-step retrieval) the measured state of the current best config, as the product's loop does."""
    backend = LandscapeBackend(landscape, instance)
    current = dict(task.baseline_config)
    current_ns = landscape.baseline_ns(instance)
    tried = {config_key(current)}
    history: list[HistoryEntry] = []
    run = Run()
    for step in range(1, budget + 1):
        context = ProposalContext(
            task=task, backend=backend, target=target, config=current, source=task.source("c", current),
            profile=state_of(current) if state_of else start, history=tuple(history), step=step,
            tried=frozenset(tried),
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
        config = nearest_valid({k: json.loads(trial.params[k]) for k in knobs}, task.baseline_config, valid)
        ns = landscape.time(config, instance)
        study.tell(trial, math.log(ns) if ns else math.log(landscape.baseline_ns(instance)) + 1.0)
        if ns is not None and ns < best_ns:
            best_key, best_ns = config_key(config), ns
        run.trajectory.append(best_key)
    return run


def nearest_valid(config: dict[str, Any], baseline: Config, valid: Mapping[str, Config]) -> Config:
    if config_key(config) in valid:
        return config
    candidate = dict(config)
    for knob in sorted(config):
        candidate[knob] = baseline[knob]
        if config_key(candidate) in valid:
            return candidate
    return dict(baseline)


def curve(scored: Landscape, instance: str, run: Run) -> list[float]:
    return [score(scored, instance, key).fraction for key in run.trajectory]
