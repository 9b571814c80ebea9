"""`kernelgraph demo --agents N`: agent processes share one namespace over HTTP, and each retrieval's
evidence is attributed to the agent that recorded it, from the graph."""

from __future__ import annotations

import io
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console
from typer.testing import CliRunner

from kernelgraph.agent.backends.c import CBackend
from kernelgraph.agent.proposers.base import HistoryEntry, ProposalContext, candidates, config_key
from kernelgraph.agent.proposers.experience import ExperienceProposer
from kernelgraph.agent.results import Outcome, ProfileResult
from kernelgraph.agent.targets import Target
from kernelgraph.agent.tasks import get_task
from kernelgraph.bench.swarm import SwarmError, SwarmOptions, render
from kernelgraph.bench.swarm_agent import AttributingProposer, age_seconds
from kernelgraph.cli import app
from kernelgraph.core.models import RetrievedTransform, RetrieveRequest, RetrieveResponse
from kernelgraph.core.signature import CounterSource
from tests.agent.yardstick_checks import assert_yardsticks
from tests.prerequisites import unavailable

TARGET = Target(name="cpu-test", kind="cpu", arch="x86-64-v3", peak_gflops=200.0, peak_gbps=20.0, cores=2,
                isa="x86-64-v3")  # fmt: skip
PROFILE = ProfileResult(
    median_ns=1e6, iqr_ns=1e4, trials=21, counter_source=CounterSource.CPU_CACHEGRIND,
    counters={"time_ns": 1e6, "flops": 2e6, "bytes": 1e6, "threads": 1.0, "cpu_utilization": 0.5,
              "instructions": 4e6, "d1_miss_rate": 0.1, "ll_miss_rate": 0.2, "ll_miss_bytes": 1e5},
)  # fmt: skip


# layernorm: the test's evidence is about its vocabulary (softmax's grew with issue #30's transforms,
# whose flat priors a Thompson draw may then prefer to the evidence).
CONTEXT_TASK = "layernorm"


def _context(history: tuple[HistoryEntry, ...] = (), tried: frozenset[str] = frozenset()) -> ProposalContext:
    task = get_task(CONTEXT_TASK)
    return ProposalContext(
        task=task, backend=CBackend(), target=TARGET, config=task.baseline_config,
        source=task.source("c", task.baseline_config), profile=PROFILE, history=history, tried=tried,
    )  # fmt: skip


def _evidence(transform: str, keys: list[str]) -> RetrievedTransform:
    return RetrievedTransform(
        transform=transform, score=0.5, attempts=len(keys), successes=len(keys), success_rate=1.0,
        weighted_log_speedup=0.7, confidence=0.8, evidence_weight=4.0, mean_similarity=0.9,
        same_target_attempts=len(keys), other_target_attempts=0, best_speedup=2.0, best_example=None, params=[],
        evidence_measurement_ids=[], evidence_attempt_keys=keys,
    )  # fmt: skip


class _Retrieval:
    """A client whose retrieve answers one scripted response."""

    def __init__(self, response: RetrieveResponse) -> None:
        self.response = response

    def retrieve(self, request: RetrieveRequest) -> RetrieveResponse:
        return self.response


def test_evidence_is_attributed_by_the_stored_agent_never_by_the_key() -> None:
    # The keys' spelling names the wrong agent on purpose: only the stored `agent` may count.
    keys = {"agent-2-run:0": "agent-1", "agent-2-run:1": "agent-2", "agent-1-run:0": "agent-3"}
    response = RetrieveResponse(
        mode="counters", target="cpu-test", signature=None, neighbours=1, neighbour_ids=["m" * 32],
        transforms=[_evidence("vectorize", ["agent-2-run:0", "agent-2-run:1"]),
                    _evidence("unroll", ["agent-1-run:0", "unknown:7"])],
        failure_log_speedup=-0.1, prior_weight=1.0,
    )  # fmt: skip
    looked_up: list[list[str]] = []

    def lookup(asked: Sequence[str]) -> list[dict[str, Any]]:
        looked_up.append(list(asked))
        return [{"attempt_key": k, "agent": keys[k], "task": "layernorm", "outcome": "kept", "speedup": 1.5,
                 "created_at": "2020-11-30T21:05:03.123456789Z"} for k in asked if k in keys]  # fmt: skip

    events: list[dict[str, Any]] = []
    proposer = AttributingProposer(
        ExperienceProposer(_Retrieval(response), seed=0), lookup, "agent-2", events.append
    )  # type: ignore[arg-type]
    # The run already tried unroll itself: only vectorize is first seen in another agent's record.
    tried = HistoryEntry(0, "unroll", {}, Outcome.DISCARDED, 0.9, None)
    proposal = proposer.propose(_context(history=(tried,)))
    assert proposal is not None
    retrieved = [e for e in events if e["event"] == "retrieved"]
    assert len(retrieved) == 1 and retrieved[0]["agent"] == "agent-2"
    sources = {row["agent"]: row for row in retrieved[0]["from"]}
    assert set(sources) == {"agent-1", "agent-3"}  # agent-2's own attempt and the unknown key are not shown
    assert sources["agent-1"]["newest"]["attempt_key"] == "agent-2-run:0"
    assert sources["agent-1"]["transforms"] == ["vectorize"] and sources["agent-3"]["transforms"] == [
        "unroll"
    ]
    assert sources["agent-1"]["newest"]["age_s"] > 0
    assert proposer.first_seen_elsewhere == {"vectorize": ["agent-1"]}
    assert proposer.retrievals == proposer.retrievals_with_others == 1
    # Seed 0 follows the strong evidence: vectorize, first seen in agent-1's record.
    assert proposal.transform == "vectorize"
    applying = [e for e in events if e["event"] == "applying"]
    assert len(applying) == 1 and applying[0]["transform"] == "vectorize"
    assert applying[0]["first_for_this_run"] is True
    assert [row["agent"] for row in applying[0]["from"]] == ["agent-1"]
    # Attempts never change: a second retrieval looks up nothing it already knows.
    proposer.propose(_context(history=(tried,)))
    assert looked_up == [["agent-2-run:0", "agent-2-run:1", "agent-1-run:0", "unknown:7"], ["unknown:7"]]
    # Nothing left to propose: no retrieval happens, and none is counted or shown.
    shown = len(events)
    task = get_task(CONTEXT_TASK)
    every = frozenset(config_key(c.config) for c in candidates(task, task.baseline_config))
    assert proposer.propose(_context(tried=every)) is None
    assert proposer.retrievals == 2 and len(events) == shown


def test_age_reads_the_services_nanosecond_timestamps() -> None:
    assert age_seconds("1970-01-01T00:00:10.000000001Z", 12.5) == pytest.approx(2.5)
    assert age_seconds(None, 1.0) is None and age_seconds("yesterday", 1.0) is None


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (SwarmOptions(agents=1), "--agents: at least 2"),
        (SwarmOptions(agents=2, tasks=("softmax",)), "2 agents need 2 different tasks"),
        (SwarmOptions(agents=2, tasks=("softmax", "softmax")), "--tasks: each agent needs a different task"),
        (SwarmOptions(agents=2, tasks=("softmax", "nosuchtask")), "--tasks: unknown task 'nosuchtask'"),
        (SwarmOptions(agents=2, tasks=("softmax", "rmsnorm@1x1")), "--tasks: task 'rmsnorm' has no instance"),
    ],
)
def test_bad_options_name_the_option(options: SwarmOptions, message: str) -> None:
    with pytest.raises(SwarmError, match=message.replace("(", r"\(")):
        options.task_specs()


@pytest.mark.neo4j
@pytest.mark.slow
def test_two_agents_share_one_namespace_and_the_second_uses_the_firsts_attempts(
    cli_on_test_neo4j: None, store: Any, tmp_path: Path
) -> None:
    """Real processes, real kernels (small instances), over HTTP. agent-2 starts once agent-1 has
    recorded an attempt, so its first retrieval must return agent-1's attempt."""
    from kernelgraph.agent.backends.bubblewrap import Sandbox, SandboxUnavailable

    try:
        Sandbox().check_available()
    except SandboxUnavailable as exc:
        unavailable(f"the kernel sandbox: {exc}")
    result = CliRunner().invoke(app, ["demo", "--agents", "2", "--budget", "2", "--tasks",
                                      "softmax@16x256,rmsnorm@16x512", "--results-dir", str(tmp_path)])  # fmt: skip
    assert result.exit_code == 0, result.output
    report = json.loads((tmp_path / "demo-agents-latest.json").read_text())
    shared = {a["agent"]: a for a in report["arms"]["shared"]["agents"]}
    assert set(shared) == {"agent-1", "agent-2"}
    # Both agents' attempts are stored in the shared namespace, recorded as themselves.
    rows = store.read("attempt_evidence", namespaces=[report["namespace"]],
                      attempt_keys=[k for a in shared.values() for k in a["attempt_keys"]])  # fmt: skip
    stored_by = {r["attempt"]["attempt_key"]: r["attempt"]["agent"] for r in rows}
    for agent, run in shared.items():
        assert run["attempt_keys"] and all(stored_by[k] == agent for k in run["attempt_keys"])
    assert report["shared_namespace"]["stored"] == report["shared_namespace"]["acknowledged"] > 0
    # agent-2's retrievals returned attempts agent-1 had recorded moments before.
    seen = [row for e in report["arms"]["shared"]["events"] if e["event"] == "retrieved" and e["agent"] == "agent-2"
            for row in e["from"] if row["agent"] == "agent-1"]  # fmt: skip
    assert seen, report["arms"]["shared"]["events"]
    assert all(row["newest"]["attempt_key"] in shared["agent-1"]["attempt_keys"] for row in seen)
    assert all(0 <= row["newest"]["age_s"] < report["arms"]["shared"]["wall_s"] for row in seen)
    assert shared["agent-2"]["retrievals_with_others"] >= 1
    assert "agent-2 (rmsnorm@16x512) retrieved evidence recorded by agent-1" in result.output
    # Alone, nobody else's evidence exists; the alone namespaces are deleted afterwards.
    assert report["arms"]["alone"]["events"] == []
    assert all(a["retrievals_with_others"] == 0 for a in report["arms"]["alone"]["agents"])
    assert report["alone_namespaces_deleted"] is True
    assert not store.read("attempts_existing", namespace=report["alone_namespaces"][1],
                          attempt_keys=[k for a in report["arms"]["alone"]["agents"] for k in a["attempt_keys"]])  # fmt: skip
    # The closing table: one row per agent, shared against alone at the same budget and seed.
    assert [r["agent"] for r in report["rows"]] == ["agent-1", "agent-2"]
    assert all(r["shared_speedup"] and r["alone_speedup"] for r in report["rows"])
    # Each agent's best beside the library (timed once per process) and the roofline.
    for run in [*report["arms"]["shared"]["agents"], *report["arms"]["alone"]["agents"]]:
        assert_yardsticks(run["yardsticks"])
    for r, run in zip(report["rows"], report["arms"]["shared"]["agents"], strict=True):
        assert r["shared_speedup_vs_library"] == run["yardsticks"]["speedup_vs_library"]
        assert r["shared_roofline_fraction"] == run["yardsticks"]["roofline_fraction"]
    wide = Console(width=300, record=True, file=io.StringIO())  # the CLI's table wraps at 80 columns
    render(report, wide)
    table = wide.export_text()
    assert "shared vs library" in table and "shared roofline" in table
    assert f"{report['rows'][0]['shared_speedup_vs_library']:.2f}x" in table
    assert "What the shared experience bought each agent" in result.output
