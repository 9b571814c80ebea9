"""What a proposer is: given the current kernel and what happened so far, propose the next variant.

A proposer sees a `ProposalContext` (task, backend, target, the current best kernel's config and
source, its latest profile, this run's history and the last diagnosis) and returns a `Proposal`: a
transform from the shared vocabulary, its parameters, and either a new config (rendered by the task)
or new source (the llm proposer). `None` means "nothing left to propose". Proposers never compile or
measure for the loop; the loop judges every proposal the same honest way.
"""

from __future__ import annotations

import itertools
import json
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from kernelgraph.agent.results import Outcome, ProfileResult
from kernelgraph.agent.targets import Target
from kernelgraph.agent.tasks.base import Config, Task

if TYPE_CHECKING:
    from kernelgraph.agent.backends.base import Backend


@dataclass(frozen=True)
class HistoryEntry:
    """One finished attempt of this run, as the next proposal sees it."""

    step: int
    transform: str
    params: Mapping[str, Any]
    outcome: Outcome
    speedup: float | None  # over the parent it was tried on, when both ran
    config: Config | None
    diagnosis: str = ""
    judged: bool = True  # False: not compared fairly (`Evaluation.judged`), no evidence either way


@dataclass(frozen=True)
class ProposalContext:
    task: Task
    backend: Backend
    target: Target
    config: Config | None  # None once the current best came from free-form source (llm)
    source: str
    profile: ProfileResult | None  # the current best kernel's latest profile (counters)
    history: Sequence[HistoryEntry] = ()
    diagnosis: str = ""  # why the last attempt failed, if it did
    step: int = 0
    run_id: str = ""
    tried: frozenset[str] = frozenset()  # config keys already tried in this run (incl. the baseline)


@dataclass(frozen=True)
class Proposal:
    transform: str
    params: Mapping[str, Any] = field(default_factory=dict)
    config: Config | None = None
    source: str | None = None  # free-form source (llm); otherwise the task renders `config`
    rationale: str = ""
    evidence: Sequence[str] = ()  # attempt keys the choice leaned on
    # What the proposer retrieved for this step ({neighbours, transforms: [{transform, score,
    # attempts}], explanation}), shown in optimize's output and JSON; None for proposers that retrieve nothing.
    retrieval: Mapping[str, Any] | None = None

    def render(self, task: Task, backend_name: str) -> str:
        """The source to evaluate: the proposal's own, or the task's rendering of its config."""
        if self.source is not None:
            return self.source
        if self.config is None:
            raise ValueError("a proposal needs a config or a source")
        return task.source(backend_name, self.config)


@runtime_checkable
class Proposer(Protocol):
    """Picks the next variant to try. `name` labels the agent in the graph (a plain identifier)."""

    name: str

    def propose(self, context: ProposalContext) -> Proposal | None: ...


@dataclass(frozen=True)
class Candidate:
    """One applicable (transform, params) in the current state and the config it leads to."""

    transform: str
    params: Mapping[str, Any]
    config: Config


def config_key(config: Config) -> str:
    """A stable key of a config (to avoid re-proposing what this run already tried)."""
    return json.dumps(dict(config), sort_keys=True, default=str)


def candidates(task: Task, config: Config, tried: frozenset[str] = frozenset()) -> list[Candidate]:
    """Every (transform, params) that applies to `config` and leads to a config not yet tried."""
    found: list[Candidate] = []
    seen: set[str] = set(tried)
    for spec in task.transforms:
        keys = list(spec.params)
        for values in itertools.product(*(spec.params[k] for k in keys)):
            params = dict(zip(keys, values, strict=True))
            new = spec.apply(config, params)
            if new is None:
                continue
            key = config_key(new)
            if key in seen:
                continue
            seen.add(key)
            found.append(Candidate(spec.name, params, new))
    return found


def candidates_by_transform(context: ProposalContext) -> dict[str, list[Candidate]]:
    """The candidates from the current best config that this run has not tried, grouped by transform;
    empty when there is no config (free-form source) or every neighbour was tried."""
    if context.config is None:
        return {}
    by_transform: dict[str, list[Candidate]] = defaultdict(list)
    for option in candidates(context.task, context.config, context.tried):
        by_transform[option.transform].append(option)
    return dict(by_transform)


def describe_config(config: Config | None) -> str:
    if config is None:
        return "free-form source"
    return " ".join(f"{k}={v}" for k, v in sorted(config.items()))
