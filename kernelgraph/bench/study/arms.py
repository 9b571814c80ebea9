"""The arms: what each evaluation run retrieves (once, for the measured state of the kernel it starts
from, held out by instance or family, within the query's vocabulary) and how it searches with it."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from kernelgraph.agent.proposers.base import Proposer
from kernelgraph.agent.proposers.experience import ExperienceProposer
from kernelgraph.agent.proposers.memoryless import MemorylessProposer
from kernelgraph.agent.results import ProfileResult
from kernelgraph.agent.targets import Target
from kernelgraph.agent.tasks.base import Config, Task
from kernelgraph.agent.vocabulary import query_vocabulary
from kernelgraph.bench.landscapes import State
from kernelgraph.bench.study.experience import stable_seed
from kernelgraph.bench.study.landscapes import Landscape
from kernelgraph.bench.study.protocol import WARM_START_CONFIGS, Arm, label_of
from kernelgraph.bench.study.simulation import Run, simulate, tpe_run
from kernelgraph.client import ExperienceClient
from kernelgraph.core.models import (
    RetrievalMode,
    RetrieveRequest,
    RetrieveResponse,
)
from kernelgraph.core.signature import CounterSource


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


@dataclass(frozen=True)
class Unit:
    """One evaluated instance under one split and one replicate."""

    split: str
    searched: str
    scored: str
    task: str
    instance: str


def exclusions(unit: Unit, tasks: Mapping[str, Task]) -> list[str]:
    if unit.split in ("instance", "development"):  # held out: the query's own instance
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
    run_seed = stable_seed(arm.name, unit.split, unit.searched, unit.task, unit.instance, str(seed))
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
