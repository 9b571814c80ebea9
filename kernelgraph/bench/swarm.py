"""`kernelgraph demo --agents N`: N agent processes on different tasks share one namespace of the HTTP
service at once, and the same agents run again alone, for comparison.

The demo starts `kernelgraph serve` on the configured Neo4j and gives every agent a writer key, the way
`kernelgraph bench load` does (kernelgraph/bench/load.py `prepared` and `served`). Then two arms, each with
N processes (kernelgraph/bench/swarm_agent.py) running the real optimize loop with the experience proposer, at the same
budget and seeds:

1. **shared**: every agent records into one fresh namespace. An agent starts when the one before it
   has recorded its first attempt, so each later agent starts with some experience in the graph. The
   output shows, live, each retrieval that returned attempts another agent recorded (whose, how many
   seconds ago, which transform) and each transform an agent then applies with such evidence behind it.
2. **alone**: each agent in a fresh namespace of its own (the same code, budget, seed, start order and
   number of processes at once: only the others' experience is missing; `memoryless` would change the
   proposer too). These namespaces are deleted afterwards unless `--keep`; the shared one is kept.

It ends with a table per agent: the best speedup over the naive kernel in each arm, the best kernel's
speedup over the library call and its roofline fraction (agent/library.py), and how many of its
kept attempts used a transform it first saw in another agent's record. The report is saved as
`results/demo-agents-<UTC time>.json` (and `-latest.json`).
"""

from __future__ import annotations

import json
import queue
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, Any

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from kernelgraph.core.settings import Settings

# Related tasks, so that experience can transfer: the row reductions (softmax, layernorm, rmsnorm) and
# matvec share most of their transforms (vectorize, unroll, parallelize, schedule, split_reduction, ...).
SWARM_TASKS = ("softmax", "layernorm", "rmsnorm", "matvec", "reduction", "elementwise_chain", "stencil2d",
               "transpose")  # fmt: skip
DEFAULT_AGENTS = 4
DEFAULT_BUDGET = 6
ARMS = ("shared", "alone")


class SwarmError(Exception):
    """The demo cannot run (bad options) or an agent failed (the message says which and why)."""


@dataclass(frozen=True)
class SwarmOptions:
    agents: int = DEFAULT_AGENTS
    budget: int = DEFAULT_BUDGET
    seed: int = 0
    target: str = "cpu-x86-64-v3"
    tasks: tuple[str, ...] = ()  # one per agent, "task" or "task@instance"; default: SWARM_TASKS[:agents]
    keep: bool = False  # keep the alone namespaces too

    def task_specs(self) -> list[str]:
        """The agents' tasks, checked: one distinct, known task per agent."""
        from kernelgraph.bench.swarm_agent import resolve_task

        if self.agents < 2:
            raise SwarmError(f"--agents: at least 2 (got {self.agents})")
        specs = list(self.tasks) or list(SWARM_TASKS[: self.agents])
        if len(specs) != self.agents:
            more = (
                f"; --tasks names {len(specs)}"
                if self.tasks
                else f"; there are {len(SWARM_TASKS)} demo tasks"
            )
            raise SwarmError(f"--agents: {self.agents} agents need {self.agents} different tasks{more}")
        if len(set(specs)) != len(specs):
            raise SwarmError(f"--tasks: each agent needs a different task (got {', '.join(specs)})")
        for spec in specs:
            try:
                resolve_task(spec)
            except KeyError as exc:  # unknown task (its message lists the known), or unknown instance
                raise SwarmError(f"--tasks: {exc.args[0] if type(exc) is KeyError else exc}") from None
        return specs


@dataclass
class _Agent:
    """One agent process of one arm, as the demo sees it."""

    index: int
    name: str
    task: str
    config: Path
    log: Path
    process: subprocess.Popen[str] | None = None
    done: dict[str, Any] | None = None
    error: str | None = None
    steps: int = 0
    events: list[dict[str, Any]] = field(default_factory=list)


def _agent_name(index: int) -> str:
    return f"agent-{index + 1}"


def run_swarm(settings: Settings, options: SwarmOptions, console: Console) -> dict[str, Any]:
    """Run both arms and check the shared namespace; returns the report (see the module docstring)."""
    from kernelgraph.agent.backends.bubblewrap import Sandbox, SandboxUnavailable
    from kernelgraph.agent.targets import get_target
    from kernelgraph.bench.load import prepared, served
    from kernelgraph.bench.reports import run_context
    from kernelgraph.service import namespaces

    specs = options.task_specs()
    target = get_target(options.target)
    if not target.available:  # as `kernelgraph demo`: a host without AVX2 times for x86-64-v2
        target = get_target("cpu-x86-64-v2")
    try:
        Sandbox().check_available()
    except SandboxUnavailable as exc:
        raise SwarmError(str(exc)) from None
    started = time.monotonic()
    tag = uuid.uuid4().hex[:8]
    shared = f"swarm-{tag}"
    alone = [f"swarm-{tag}-alone-{i + 1}" for i in range(options.agents)]
    names = [_agent_name(i) for i in range(options.agents)]
    labels = {shared: [f"demo {n}" for n in names]} | {
        ns: [f"demo {n} alone"] for ns, n in zip(alone, names, strict=True)
    }
    report: dict[str, Any] = {
        "demo": "agents", "started_at": datetime.now(UTC).isoformat(timespec="seconds"), **run_context(),
        "agents": options.agents, "budget": options.budget, "seed": options.seed, "target": target.name,
        "tasks": specs, "namespace": shared, "alone_namespaces": alone,
        "baseline": "alone: the same agent (experience proposer, budget, seed, start order, processes at once) "
        "in a fresh namespace of its own",
        "arms": {},
    }  # fmt: skip
    workdir = Path(tempfile.mkdtemp(prefix="kernelgraph-swarm-"))
    try:
        with prepared(settings, labels, console) as ready, served(settings, workdir) as (port, _):
            url = f"http://127.0.0.1:{port}"
            for arm in ARMS:
                keys = [ready.keys[shared][i] for i in range(options.agents)] if arm == "shared" else [
                    ready.keys[ns][0] for ns in alone]  # fmt: skip
                console.rule(
                    f"[bold]{'1' if arm == 'shared' else '2'}. {options.agents} agents, "
                    + (f"one shared namespace ({shared})" if arm == "shared" else "each alone in its own namespace")
                    + f", {options.budget} attempts each, on {target.name}"
                )  # fmt: skip
                phase_started = time.monotonic()
                agents = _run_arm(arm, specs, keys, url, target.name, options, tag, workdir, console)
                report["arms"][arm] = {
                    "wall_s": round(time.monotonic() - phase_started, 1),
                    "agents": [a.done for a in agents],
                    "events": [
                        e for a in agents for e in a.events if e["event"] in ("retrieved", "applying")
                    ],
                }
            acknowledged = [k for a in report["arms"]["shared"]["agents"] for k in a["attempt_keys"]]
            stored = ready.store.read("attempt_evidence", namespaces=[shared], attempt_keys=acknowledged)
            by_agent: dict[str, int] = {}
            for row in stored:
                by_agent[row["attempt"]["agent"]] = by_agent.get(row["attempt"]["agent"], 0) + 1
            report["shared_namespace"] = {"acknowledged": len(acknowledged), "stored": len(stored),
                                          "stored_by_agent": dict(sorted(by_agent.items()))}  # fmt: skip
            if not options.keep:
                with console.status("deleting the alone namespaces..."):
                    for ns in alone:
                        namespaces.delete(ready.store, ns)
                report["alone_namespaces_deleted"] = True
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    report["rows"] = summary_rows(report)
    report["wall_s"] = round(time.monotonic() - started, 1)
    return report


def _run_arm(
    arm: str, specs: Sequence[str], keys: Sequence[str], url: str, target: str, options: SwarmOptions, tag: str,
    workdir: Path, console: Console,
) -> list[_Agent]:  # fmt: skip
    """Start the agents one after another (each once the one before has recorded an attempt), show what
    they report as it comes, and return them when all have ended; raises SwarmError if one failed."""
    agents = []
    for i, (spec, key) in enumerate(zip(specs, keys, strict=True)):
        name = _agent_name(i)
        config = workdir / f"{arm}-{name}.json"
        config.write_text(json.dumps({
            "agent": name, "url": url, "key": key, "task": spec, "target": target, "budget": options.budget,
            "seed": options.seed + i, "run_id": f"swarm-{tag}-{arm}-{name}",
        }))  # fmt: skip
        agents.append(_Agent(i, name, spec, config, workdir / f"{arm}-{name}.log"))
    events: queue.Queue[tuple[int, dict[str, Any]]] = queue.Queue()
    started_at = time.monotonic()
    progress = Progress(
        TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TextColumn("{task.fields[best]}"),
        TimeElapsedColumn(), console=console,
    )  # fmt: skip
    bars: dict[int, Any] = {}
    try:
        with progress:
            _launch(agents[0], events)
            launched, ended = 1, 0
            while ended < len(agents):
                try:
                    index, event = events.get(timeout=0.5)
                except queue.Empty:
                    continue
                agent = agents[index]
                kind = event["event"]
                if kind != "exit":
                    agent.events.append(event | {"t": round(time.monotonic() - started_at, 1)})
                if kind == "started":
                    bars[index] = progress.add_task(
                        f"{arm} {agent.name} {agent.task}", total=options.budget, best=""
                    )
                elif kind == "step":
                    agent.steps += 1
                    progress.update(
                        bars[index], completed=agent.steps, best=f"best {event['best_so_far']:.2f}x"
                    )
                elif kind == "done":
                    agent.done = event
                    progress.update(bars[index], completed=options.budget)
                elif kind == "error":
                    agent.error = event["message"]
                elif kind == "exit":
                    ended += 1
                    if agent.done is None and agent.error is None:
                        agent.error = f"exited with status {event['status']}"
                if arm == "shared" or kind == "done":
                    line = event_line(event, agents, time.monotonic() - started_at)
                    if line:
                        progress.console.print(line, highlight=False)
                # The next agent starts once this one has recorded an attempt, or had one not judged (the
                # cores were not free: nothing to record), or has ended.
                if launched < len(agents) and index == launched - 1 and (
                        (kind == "step" and (event["recorded"] or not event.get("judged", True)))
                        or kind == "exit"):  # fmt: skip
                    _launch(agents[launched], events)
                    launched += 1
    finally:
        for agent in agents:
            if agent.process is not None and agent.process.poll() is None:
                agent.process.kill()
                agent.process.wait()
    failed = [a for a in agents if a.done is None]
    if failed:
        a = failed[0]
        tail = a.log.read_text(errors="replace")[-1500:] if a.log.exists() else ""
        raise SwarmError(f"{arm}: {a.name} ({a.task}) failed: {a.error}\n{tail}".rstrip())
    return agents


def _launch(agent: _Agent, events: queue.Queue[tuple[int, dict[str, Any]]]) -> None:
    """Start the agent's process and a thread that queues what it writes on stdout, then its exit."""
    with open(agent.log, "w") as log:
        agent.process = subprocess.Popen(
            [sys.executable, "-m", "kernelgraph.bench.swarm_agent", str(agent.config)], stdout=subprocess.PIPE,
            stderr=log, stdin=subprocess.DEVNULL, text=True,
        )  # fmt: skip
    process = agent.process

    def pump(stream: IO[str]) -> None:
        for line in stream:
            try:
                event = json.loads(line)
            except ValueError:
                continue
            if isinstance(event, dict) and "event" in event:
                events.put((agent.index, event))
        events.put((agent.index, {"event": "exit", "status": process.wait()}))

    assert process.stdout is not None
    threading.Thread(target=pump, args=(process.stdout,), daemon=True).start()


def _age(seconds: float | None) -> str:
    return "?" if seconds is None else f"{seconds:.1f} s ago"


def _newest(row: dict[str, Any]) -> str:
    n = row["newest"]
    gain = f" {n['speedup']:.2f}x" if n.get("speedup") else ""
    return f"{n['transform']} {n['outcome']}{gain}, {_age(n['age_s'])}"


def event_line(event: dict[str, Any], agents: Sequence[_Agent], elapsed: float) -> str | None:
    """The live line for one event of the shared arm (None: nothing to show)."""
    kind = event["event"]
    by_name = {a.name: a for a in agents}
    who = (
        f"[bold]{event.get('agent')}[/] ({by_name[event['agent']].task})"
        if event.get("agent") in by_name
        else ""
    )
    stamp = f"[dim]{elapsed:6.1f}s[/]"
    if kind == "started":
        return f"{stamp} {who} starts"
    if kind == "retrieved":
        parts = [f"[cyan]{r['agent']}[/] ({r['task']}): {r['attempts']} attempt{'s' if r['attempts'] != 1 else ''}, "
                 f"newest {_newest(r)}" for r in event["from"]]  # fmt: skip
        return f"{stamp} {who} retrieved evidence recorded by " + "; ".join(parts)
    if kind == "applying":
        params = ",".join(f"{k}={v}" for k, v in event["params"].items())
        whose = "; ".join(f"[cyan]{r['agent']}[/]'s {r['task']} ({_newest(r)})" for r in event["from"])
        first = "first seen in the record of" if event["first_for_this_run"] else "also tried by"
        return f"{stamp} {who} [magenta]applies {event['transform']}({params})[/], {first} {whose}"
    if kind == "step":
        gain = f" {event['speedup']:.2f}x" if event.get("speedup") else ""
        style = (
            "green" if event["outcome"] == "kept" else "yellow" if event["outcome"] == "discarded" else "red"
        )
        seen = event["first_seen_from"]
        via = f" [dim](a transform first seen in the record of {', '.join(seen)})[/]" if seen else ""
        return (f"{stamp} {who} step {event['step']} {event['transform']} [{style}]{event['outcome']}[/]{gain}, "
                f"best {event['best_so_far']:.2f}x{via}")  # fmt: skip
    if kind == "done":
        return (
            f"{stamp} {who} done: {event['speedup']:.2f}x over the naive kernel"
            if event.get("speedup")
            else None
        )
    return None


def summary_rows(report: dict[str, Any]) -> list[dict[str, Any]]:
    """One row per agent: best speedup shared and alone, and what it used from the others."""
    alone = {a["agent"]: a for a in report["arms"].get("alone", {}).get("agents", [])}
    rows = []
    for a in report["arms"]["shared"]["agents"]:
        b = alone.get(a["agent"], {})
        shared_marks, alone_marks = a.get("yardsticks") or {}, b.get("yardsticks") or {}
        rows.append({
            "agent": a["agent"], "task": a["task"], "shared_speedup": a["speedup"], "alone_speedup": b.get("speedup"),
            "library": shared_marks.get("library"),
            "shared_speedup_vs_library": shared_marks.get("speedup_vs_library"),
            "alone_speedup_vs_library": alone_marks.get("speedup_vs_library"),
            "shared_roofline_fraction": shared_marks.get("roofline_fraction"),
            "alone_roofline_fraction": alone_marks.get("roofline_fraction"),
            "kept": a["kept"], "kept_first_seen_elsewhere": a["kept_first_seen_elsewhere"],
            "retrievals": a["retrievals"], "retrievals_with_others": a["retrievals_with_others"],
        })  # fmt: skip
    return rows


def render(report: dict[str, Any], console: Console) -> None:
    """The closing table and lines."""
    from kernelgraph.bench.stats import geomean_of_all  # numpy: not at the CLI's start-up

    rows = report["rows"]
    table = Table(
        title=f"What the shared experience bought each agent ({report['budget']} attempts, same seed)"
    )
    columns = ("agent", "task", "shared", "alone", "shared/alone", "shared vs library", "alone vs library",
               "shared roofline", "kept", "kept¹", "retrievals²")  # fmt: skip
    for column in columns:
        table.add_column(column, justify="left" if column in ("agent", "task") else "right")

    def x(v: float | None) -> str:
        return "-" if v is None else f"{v:.2f}x"

    def pct(v: float | None) -> str:
        return "-" if v is None else f"{100 * v:.1f}%"

    for r in rows:
        ratio = (
            r["shared_speedup"] / r["alone_speedup"] if r["shared_speedup"] and r["alone_speedup"] else None
        )
        table.add_row(r["agent"], r["task"], x(r["shared_speedup"]), x(r["alone_speedup"]), x(ratio),
                      x(r["shared_speedup_vs_library"]), x(r["alone_speedup_vs_library"]),
                      pct(r["shared_roofline_fraction"]), str(r["kept"]),
                      str(r["kept_first_seen_elsewhere"]), f"{r['retrievals_with_others']} of {r['retrievals']}")  # fmt: skip
    shared_g, alone_g = (
        geomean_of_all([r["shared_speedup"] for r in rows]),
        geomean_of_all([r["alone_speedup"] for r in rows]),
    )
    table.add_row("[bold]geomean[/]", "", f"[bold]{x(shared_g)}[/]", f"[bold]{x(alone_g)}[/]",
                  x(shared_g / alone_g) if shared_g and alone_g else "-",
                  x(geomean_of_all([r["shared_speedup_vs_library"] for r in rows])),
                  x(geomean_of_all([r["alone_speedup_vs_library"] for r in rows])), "", "", "", "")  # fmt: skip
    console.print(table)
    console.print(
        "¹ kept attempts (shared arm) whose transform the agent first saw in another agent's record, before "
        "trying it itself. ² retrievals that returned attempts recorded by another agent, of all its retrievals.",
        highlight=False,
    )
    space = report["shared_namespace"]
    console.print(
        f"speedup: the best kernel over the naive one, timed interleaved at the end of each run; vs library: "
        f"the library call's time ({', '.join(sorted({r['library'] for r in rows if r['library']})) or 'none timed'}) "
        f"over the best kernel's; roofline: the roofline's least time over the best kernel's. alone: "
        f"the same agent, budget and seed in a namespace of its own. Shared namespace {report['namespace']}: "
        f"{space['stored']} of {space['acknowledged']} acknowledged attempts stored "
        f"({', '.join(f'{k} {v}' for k, v in space['stored_by_agent'].items())}). "
        f"Shared arm {report['arms']['shared']['wall_s']:.0f} s, alone arm {report['arms']['alone']['wall_s']:.0f} s, "
        f"demo {report['wall_s']:.0f} s.",
        highlight=False,
    )  # fmt: skip
    console.print("Who learned from whom, in Neo4j Browser:")
    console.print(
        f"MATCH (a:Attempt {{namespace: '{report['namespace']}'}})\n"
        "RETURN a.agent AS agent, a.task AS task, a.transform AS transform, a.outcome AS outcome,\n"
        "       a.speedup AS speedup, a.created_at AS at ORDER BY at;",
        highlight=False, markup=False, soft_wrap=True,
    )  # fmt: skip
