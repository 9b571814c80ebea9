"""One agent of `kernelgraph demo --agents N`, run as its own process: the optimize loop on one task with
the experience proposer, talking to the service over HTTP only, with its own API key.

`python -m kernelgraph.bench.swarm_agent CONFIG.json` runs it (the demo, kernelgraph/bench/swarm.py, starts one per
agent). It writes one JSON object per line on stdout, as things happen:

- `started`: the run began (task, run id, target);
- `retrieved`: a retrieval returned evidence that another agent recorded: per other agent, how many of
  its attempts and the newest of them (transform, outcome, how many seconds before the retrieval);
- `applying`: the transform the proposer then chose had such evidence behind it (whose, how old);
- `step`: an attempt was evaluated and recorded (outcome, speedup, and `first_seen_from`: the agents in
  whose record this run first saw its transform, before trying it itself; empty when it saw it first
  in its own);
- `done`: the run's result; `error`: the run failed (the message).

Who recorded an attempt comes from the graph, never from the key's spelling: the retrieve response names
the attempts behind each transform (`evidence_attempt_keys`), and `POST /v1/evidence` returns each one's
recording `agent`, `run_id` and `created_at`. An attempt the service does not return is not attributed.
"""

from __future__ import annotations

import json
import logging
import math
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from kernelgraph.agent.loop import StepReport, optimize
from kernelgraph.agent.proposers.base import Proposal, ProposalContext
from kernelgraph.agent.proposers.experience import ExperienceProposer
from kernelgraph.agent.results import Outcome
from kernelgraph.agent.tasks.base import Task
from kernelgraph.core.errors import KernelGraphError
from kernelgraph.core.models import MAX_EVIDENCE_KEYS

log = logging.getLogger(__name__)

Emit = Callable[[dict[str, Any]], None]


@dataclass(frozen=True)
class AgentConfig:
    """What the demo tells one agent process (a JSON file)."""

    agent: str  # who the attempts are recorded as, e.g. "agent-1"
    url: str  # the service's base URL
    key: str  # this agent's API key (a writer key of the namespace it records in)
    task: str  # a task name, or "task@instance" to time one of its instances
    target: str
    budget: int
    seed: int
    run_id: str

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> AgentConfig:
        return cls(**{name: data[name] for name in cls.__dataclass_fields__})


def resolve_task(spec: str) -> Task:
    """`name` or `name@instance` (e.g. `softmax@16x256`): the task, timed at that instance if named."""
    from kernelgraph.agent.tasks import get_task

    name, _, instance = spec.partition("@")
    task = get_task(name)
    return task.at(instance) if instance else task


def age_seconds(created_at: str | None, now: float) -> float | None:
    """Seconds between an attempt's `created_at` (ISO 8601, as the service returns it) and `now`."""
    if not created_at:
        return None
    try:
        return max(0.0, now - datetime.fromisoformat(created_at).timestamp())
    except ValueError:
        return None


@dataclass(frozen=True)
class Sighting:
    """An attempt in a retrieval's evidence that another agent recorded."""

    transform: str
    attempt_key: str
    agent: str
    task: str
    outcome: str
    speedup: float | None
    age_s: float | None

    def to_json(self) -> dict[str, Any]:
        return {"transform": self.transform, "attempt_key": self.attempt_key, "agent": self.agent,
                "task": self.task, "outcome": self.outcome, "speedup": self.speedup,
                "age_s": None if self.age_s is None else round(self.age_s, 1)}  # fmt: skip


def by_agent(sightings: Sequence[Sighting]) -> list[dict[str, Any]]:
    """Per other agent: how many of its attempts, and the newest of them."""
    groups: dict[str, list[Sighting]] = {}
    for s in sightings:
        groups.setdefault(s.agent, []).append(s)
    rows = []
    for agent, group in sorted(groups.items()):
        newest = min(group, key=lambda s: math.inf if s.age_s is None else s.age_s)
        rows.append({"agent": agent, "task": newest.task, "attempts": len({s.attempt_key for s in group}),
                     "transforms": sorted({s.transform for s in group}), "newest": newest.to_json()})  # fmt: skip
    return rows


class AttributingProposer:
    """The experience proposer, plus who recorded the evidence it retrieved (from the graph).

    It proposes exactly what the wrapped proposer proposes; after each proposal it resolves the
    retrieved transforms' evidence attempts to their recording agent (`POST /v1/evidence`, each key
    once: attempts are never rewritten) and emits `retrieved` and `applying` events for the
    evidence that another agent recorded.
    """

    def __init__(self, inner: ExperienceProposer, lookup: Callable[[Sequence[str]], list[dict[str, Any]]],
                 agent: str, emit: Emit) -> None:  # fmt: skip
        self.inner = inner
        self.name = inner.name
        self.lookup = lookup
        self.agent = agent
        self.emit = emit
        self.known: dict[str, dict[str, Any]] = {}  # attempt key -> its stored attempt
        # Transforms this run first saw in another agent's record (in a retrieval's evidence before the
        # run tried them itself), with the agents whose attempts those were.
        self.first_seen_elsewhere: dict[str, list[str]] = {}
        self.retrievals = 0
        self.retrievals_with_others = 0

    def propose(self, context: ProposalContext) -> Proposal | None:
        # The inner proposer leaves both as they were when it has no options (and retrieves nothing).
        self.inner.last_evidence, self.inner.last_response = {}, None
        proposal = self.inner.propose(context)
        now = time.time()
        if self.inner.last_response is None:
            return proposal
        self.retrievals += 1
        evidence = self.inner.last_evidence
        self._resolve([k for row in evidence.values() for k in row.evidence_attempt_keys])
        sightings = [
            Sighting(transform=name, attempt_key=key, agent=str(stored["agent"]), task=str(stored.get("task")),
                     outcome=str(stored.get("outcome")), speedup=stored.get("speedup"),
                     age_s=age_seconds(stored.get("created_at"), now))
            for name, row in evidence.items() for key in dict.fromkeys(row.evidence_attempt_keys)
            if (stored := self.known.get(key)) is not None and stored.get("agent") != self.agent
        ]  # fmt: skip
        if not sightings:
            return proposal
        self.retrievals_with_others += 1
        tried = {entry.transform for entry in context.history}
        for s in sightings:
            if s.transform not in tried:
                agents = self.first_seen_elsewhere.setdefault(s.transform, [])
                if s.agent not in agents:
                    agents.append(s.agent)
        self.emit({"event": "retrieved", "agent": self.agent, "step": context.step,
                   "from": by_agent(sightings)})  # fmt: skip
        behind = [s for s in sightings if proposal is not None and s.transform == proposal.transform]
        if proposal is not None and behind:
            self.emit({"event": "applying", "agent": self.agent, "step": context.step,
                       "transform": proposal.transform, "params": dict(proposal.params),
                       "first_for_this_run": proposal.transform not in tried, "from": by_agent(behind)})  # fmt: skip
        return proposal

    def _resolve(self, keys: Sequence[str]) -> None:
        missing = [k for k in dict.fromkeys(keys) if k not in self.known]
        for start in range(0, len(missing), MAX_EVIDENCE_KEYS):
            try:
                rows = self.lookup(missing[start : start + MAX_EVIDENCE_KEYS])
            except KernelGraphError as exc:  # unattributed, never guessed
                log.warning("evidence lookup failed (%s); those attempts stay unattributed", exc)
                return
            for row in rows:
                self.known[str(row["attempt_key"])] = row


def step_event(agent: str, report: StepReport, first_seen_from: Sequence[str]) -> dict[str, Any]:
    """An evaluated, recorded attempt; `first_seen_from`: the agents in whose record this run first saw
    the transform (empty when it saw it first in its own)."""
    return {"event": "step", "agent": agent, "step": report.step, "transform": report.transform,
            "params": report.params, "outcome": report.outcome.value, "speedup": report.speedup,
            "best_so_far": report.speedup_so_far, "recorded": report.recorded, "judged": report.judged,
            "first_seen_from": list(first_seen_from)}  # fmt: skip


def run_agent(config: AgentConfig, emit: Emit) -> dict[str, Any]:
    """Run the agent's optimize loop over HTTP, emitting events; returns the `done` event."""
    from kernelgraph.agent.backends.c import CBackend
    from kernelgraph.agent.backends.timing import FAST_TIMING
    from kernelgraph.agent.targets import get_target
    from kernelgraph.client import KernelGraphClient

    task = resolve_task(config.task)
    target = get_target(config.target)
    with KernelGraphClient(config.url, config.key, timeout=60.0) as client:
        proposer = AttributingProposer(ExperienceProposer(client, seed=config.seed), client.evidence,
                                       config.agent, emit)  # fmt: skip
        emit({"event": "started", "agent": config.agent, "task": config.task, "run_id": config.run_id,
              "target": target.name, "budget": config.budget, "at": time.time()})  # fmt: skip

        def on_step(report: StepReport) -> None:
            emit(step_event(config.agent, report, proposer.first_seen_elsewhere.get(report.transform, ())))

        result = optimize(task, CBackend(timing=FAST_TIMING), target, proposer, client, config.budget,
                          config.seed, run_id=config.run_id, agent=config.agent, on_step=on_step)  # fmt: skip
    kept = [s for s in result.steps if s.outcome == Outcome.KEPT]
    return {
        "event": "done", "agent": config.agent, "task": config.task, "run_id": config.run_id,
        "speedup": result.speedup if math.isfinite(result.speedup) else None,
        "final_interleaved": result.final_interleaved, "attempts": result.attempts, "kept": len(kept),
        "kept_first_seen_elsewhere": sum(1 for s in kept if s.transform in proposer.first_seen_elsewhere),
        "first_seen_elsewhere": proposer.first_seen_elsewhere, "unrecorded": result.unrecorded,
        "not_judged": result.not_judged,
        "retrievals": proposer.retrievals, "retrievals_with_others": proposer.retrievals_with_others,
        "attempt_keys": [s.attempt_key for s in result.steps if s.recorded],
        "curve": result.curve, "at": time.time(),
        # The best beside the library and the roofline (agent/library.py); None for a static-only run.
        "yardsticks": result.best_yardsticks.to_json() if result.best_yardsticks is not None else None,
    }  # fmt: skip


def main(argv: Sequence[str] | None = None) -> int:
    """The process: read the config, run, write events to stdout; exit 1 on failure."""
    args = list(sys.argv[1:] if argv is None else argv)
    logging.basicConfig(
        level=logging.WARNING, stream=sys.stderr, format="%(levelname)s %(name)s: %(message)s"
    )

    def emit(event: dict[str, Any]) -> None:
        sys.stdout.write(json.dumps(event, default=str) + "\n")
        sys.stdout.flush()

    if len(args) != 1:
        print("usage: python -m kernelgraph.bench.swarm_agent CONFIG.json", file=sys.stderr)
        return 2
    config = AgentConfig.from_json(json.loads(Path(args[0]).read_text()))
    try:
        emit(run_agent(config, emit))
    except Exception as exc:  # the demo shows it and stops; the traceback goes to the agent's log
        log.exception("agent %s failed", config.agent)
        emit({"event": "error", "agent": config.agent, "message": f"{type(exc).__name__}: {exc}"})
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
