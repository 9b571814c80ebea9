"""`kernelgraph optimize` and `kernelgraph demo`: the agent from the terminal.

Both reach the experience graph through `kernelgraph.client.connect(settings)`: over HTTP when
KERNELGRAPH_SERVICE_URL is set, else in-process on the configured (or local) Neo4j.
"""

from __future__ import annotations

import json
import math
import time
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.console import Console
from rich.table import Table

if TYPE_CHECKING:
    from kernelgraph.agent.backends.base import Backend
    from kernelgraph.agent.loop import OptimizeResult
    from kernelgraph.agent.proposers.base import Proposer
    from kernelgraph.client import ExperienceClient
    from kernelgraph.client.settings import Settings

console = Console()
err = Console(stderr=True)

PROPOSERS = ("memoryless", "experience", "text", "hybrid", "llm")
# The demo: experience from these tasks (seen), then a task it has not seen, same budget both ways.
# Seen tasks span several access-pattern families; matmul's family (dense-matmul) is not among them.
DEMO_SEEN = ("stencil2d", "transpose", "matvec", "elementwise_chain", "reduction", "softmax")
DEMO_SEEDS = 3  # one run per arm says little: each arm runs with 3 seeds on the unseen task
DEMO_UNSEEN = "matmul"
DEMO_NAMESPACE = "demo"
KERNELBENCH_NAMESPACE = "kernelbench"  # the published timings the demo ends with


def _fail(message: str, code: int = 2) -> typer.Exit:
    err.print(f"[bold red]error:[/] {message}", highlight=False)
    return typer.Exit(code)


def make_backend(name: str, *, quick: bool = True) -> Backend:
    """The backend by name; `quick` caps the trials (still 20 at least: the evaluator's floor) and the time.

    Fails here, before any run starts, when the sandbox every kernel runs in is not installed."""
    from kernelgraph.agent.backends.bubblewrap import Sandbox, SandboxUnavailable

    try:
        Sandbox().check_available()
    except SandboxUnavailable as exc:
        raise _fail(str(exc)) from None
    if name == "c":
        from kernelgraph.agent.backends.c import CBackend
        from kernelgraph.agent.backends.timing import FAST_TIMING, TimingPlan

        plan = FAST_TIMING if quick else TimingPlan()
        return CBackend(timing=plan)
    if name == "triton":
        from kernelgraph.agent.backends.triton import TritonBackend

        return TritonBackend()
    raise _fail(f"unknown backend {name!r}; known: c, triton")


def make_proposer(
    kind: str, client: ExperienceClient, settings: Settings, seed: int, exclude_task: str | None = None
) -> Proposer:
    """The proposer by CLI name (the one place that picks a concrete proposer)."""
    from kernelgraph.agent.proposers.experience import ExperienceProposer
    from kernelgraph.agent.proposers.memoryless import MemorylessProposer

    if kind == "memoryless":
        return MemorylessProposer(seed)
    if kind in ("experience", "text", "hybrid"):
        mode = "counters" if kind == "experience" else kind
        return ExperienceProposer(client, mode=mode, seed=seed, exclude_task=exclude_task)
    if kind == "llm":
        import os

        from kernelgraph.agent.proposers.llm import LLMProposer

        if not os.environ.get("ANTHROPIC_API_KEY"):
            raise _fail("the llm proposer needs ANTHROPIC_API_KEY in the environment")
        retriever = ExperienceProposer(client, seed=seed, exclude_task=exclude_task)
        return LLMProposer.from_settings(settings, retriever=retriever, seed=seed)
    raise _fail(f"unknown proposer {kind!r}; known: {', '.join(PROPOSERS)}")


def _connect(settings: Settings) -> ExperienceClient:
    from kernelgraph.client import connect
    from kernelgraph.client.errors import KernelGraphError

    try:
        return connect(settings)
    except KernelGraphError as exc:
        raise _fail(f"cannot reach the experience graph: {exc.message}", 1) from None
    except Exception as exc:  # the driver's own errors (auth, unreachable) carry no domain type yet
        raise _fail(f"cannot reach the experience graph: {exc}", 1) from None


def result_table(results: list[OptimizeResult], title: str) -> Table:
    """Baseline, best, speedup and attempts by outcome, one column per run."""
    table = Table(title=title)
    table.add_column("")
    for r in results:
        table.add_column(f"{r.task} · {r.proposer}", justify="right")
    untimed = "not timed (no GPU)"
    rows: list[tuple[str, list[str]]] = [
        ("baseline", [untimed if r.static_only else f"{r.baseline_ns / 1e6:.2f} ms" for r in results]),
        ("best", [untimed if r.static_only else f"{r.best_ns / 1e6:.2f} ms" for r in results]),
        ("speedup", [untimed if r.static_only else f"[bold]{r.speedup:.2f}x[/bold]" for r in results]),
        ("attempts", [str(r.attempts) for r in results]),
    ]
    for outcome in results[0].outcomes if results else {}:
        rows.append((f"  {outcome}", [str(r.outcomes[outcome]) for r in results]))
    rows.append(("speedup after each attempt", [" ".join(f"{x:.1f}" for x in r.curve) for r in results]))
    for label, cells in rows:
        table.add_row(label, *cells)
    return table


def optimize_cmd(
    task_name: Annotated[
        str, typer.Argument(metavar="TASK", help="Task name (see `kernelgraph tasks list`).")
    ],
    target_name: Annotated[
        str, typer.Option("--target", help="Target (see `kernelgraph targets list`).")
    ] = "cpu-x86-64-v3",
    budget: Annotated[int, typer.Option("--budget", min=1, max=500, help="Attempts to spend.")] = 10,
    proposer_kind: Annotated[
        str, typer.Option("--proposer", help="memoryless | experience | text | hybrid | llm")
    ] = "experience",
    backend_name: Annotated[str, typer.Option("--backend", help="c | triton")] = "c",
    seed: Annotated[int, typer.Option("--seed", help="Seed of the proposer's choices.")] = 0,
    exclude_task: Annotated[
        str | None, typer.Option("--exclude-task", help="Ignore experience from this task (held-out runs).")
    ] = None,
    full_timing: Annotated[
        bool, typer.Option("--full-timing", help="The backend's full trial counts (slower).")
    ] = False,
    as_json: Annotated[
        bool, typer.Option("--json", help="Print exactly one JSON object, no progress.")
    ] = False,
    out: Annotated[Path | None, typer.Option("--out", help="Write the best source here.")] = None,
) -> None:
    """Optimize one task on one target with a budget of attempts; every attempt lands in the graph."""
    from kernelgraph.agent.loop import OptimizeError, optimize
    from kernelgraph.agent.targets import UnknownTargetError, get_target
    from kernelgraph.agent.tasks import UnknownTaskError, get_task
    from kernelgraph.client.errors import KernelGraphError
    from kernelgraph.client.settings import get_settings

    if proposer_kind not in PROPOSERS:
        raise _fail(f"unknown proposer {proposer_kind!r}; known: {', '.join(PROPOSERS)}")
    try:
        task = get_task(task_name, backend_name)
        target = get_target(target_name)
    except (UnknownTaskError, UnknownTargetError) as exc:
        raise _fail(str(exc)) from None
    if not target.available:
        raise _fail(f"target {target.name} is unavailable here: {target.unavailable_reason}")
    settings = get_settings()
    backend = make_backend(backend_name, quick=not full_timing)
    client = _connect(settings)
    try:
        proposer = make_proposer(proposer_kind, client, settings, seed, exclude_task)
        result = optimize(
            task, backend, target, proposer, client, budget, seed, console=None if as_json else console
        )
    except OptimizeError as exc:
        raise _fail(str(exc), 1) from None
    except KernelGraphError as exc:
        raise _fail(f"experience graph: {exc.message}", 1) from None
    finally:
        client.close()
    if out is not None:
        out.write_text(result.best_source)
    if as_json:
        typer.echo(json.dumps({**result.to_json(), "best_source_path": str(out) if out else None}))
        return
    console.print(result_table([result], f"{task.name} on {target.name}"))
    if out is not None:
        console.print(f"best source written to {out}")
    if result.unrecorded:
        err.print(f"[yellow]warning:[/] {result.unrecorded} attempts could not be recorded (see the log)")


def demo_cmd(
    budget: Annotated[int, typer.Option("--budget", min=1, max=100, help="Attempts per run.")] = 8,
    seen_budget: Annotated[
        int, typer.Option("--seen-budget", min=1, max=100, help="Attempts per seen task.")
    ] = 10,
    target_name: Annotated[str, typer.Option("--target", help="Target to optimize for.")] = "cpu-x86-64-v3",
    seed: Annotated[int, typer.Option("--seed", help="Seed of every proposer.")] = 0,
) -> None:
    """Learn from a few tasks, then optimize an unseen one with experience and without, side by side."""
    from kernelgraph.agent.loop import OptimizeError, optimize
    from kernelgraph.agent.proposers.experience import ExperienceProposer
    from kernelgraph.agent.proposers.memoryless import MemorylessProposer
    from kernelgraph.agent.targets import get_target
    from kernelgraph.agent.tasks import get_task
    from kernelgraph.client.errors import KernelGraphError
    from kernelgraph.client.settings import get_settings
    from kernelgraph.service.neo4j_local import LocalNeo4j

    started = time.monotonic()
    settings = get_settings().model_copy(update={"namespace": DEMO_NAMESPACE})
    target = get_target(target_name)
    if not target.available:
        target = get_target("cpu-x86-64-v2")
    backend = make_backend("c")
    client = _connect(settings)
    unseen = get_task(DEMO_UNSEEN)
    try:
        console.rule(f"[bold]1. Building experience on {', '.join(DEMO_SEEN)} ({target.name})")
        learned = []
        for i, name in enumerate(DEMO_SEEN):
            proposer = ExperienceProposer(client, seed=seed + i, exclude_task=DEMO_UNSEEN)
            learned.append(
                optimize(
                    get_task(name), backend, target, proposer, client, seen_budget, seed, console=console
                )
            )
        console.print(result_table(learned, "Experience gathered"))
        console.rule(
            f"[bold]2. {DEMO_UNSEEN}, never seen: experience vs memoryless, {budget} attempts, {DEMO_SEEDS} seeds each"
        )
        runs: dict[str, list[OptimizeResult]] = {"experience": [], "memoryless": []}
        for s in range(seed, seed + DEMO_SEEDS):
            # exclude_task keeps the comparison honest even when earlier demos already recorded matmul.
            arms: dict[str, Proposer] = {
                "experience": ExperienceProposer(client, seed=s, exclude_task=DEMO_UNSEEN),
                "memoryless": MemorylessProposer(s),
            }
            for arm, arm_proposer in arms.items():
                console.print(f"[bold]{arm}[/], seed {s}")
                runs[arm].append(
                    optimize(unseen, backend, target, arm_proposer, client, budget, s, console=console)
                )
    except OptimizeError as exc:
        raise _fail(str(exc), 1) from None
    except KernelGraphError as exc:
        raise _fail(f"experience graph: {exc.message}", 1) from None
    finally:
        client.close()
    table = Table(title=f"{DEMO_UNSEEN} (unseen) at {budget} attempts: speedup over the naive baseline")
    table.add_column("seed")
    for arm in runs:
        table.add_column(arm, justify="right")
    for i in range(DEMO_SEEDS):
        table.add_row(str(seed + i), *(f"{runs[arm][i].speedup:.2f}x" for arm in runs))
    geomeans = {arm: math.exp(sum(math.log(r.speedup) for r in rs) / len(rs)) for arm, rs in runs.items()}
    table.add_row("[bold]geomean[/]", *(f"[bold]{g:.2f}x[/]" for g in geomeans.values()))
    console.print(table)
    console.print(
        f"experience: [bold]{geomeans['experience']:.2f}x[/bold]   memoryless: [bold]{geomeans['memoryless']:.2f}x[/bold]"
        f"   (demo took {time.monotonic() - started:.0f} s; docs/results.md has the full held-out study)"
    )
    _transfer_finding(settings)
    browser = LocalNeo4j(settings).browser_url if settings.uses_local_server else settings.effective_neo4j_uri
    console.rule("[bold]4. Look at what it learned")
    console.print(
        f"Neo4j Browser: {browser}  (user {settings.neo4j_user}; password in {settings.neo4j_home / 'password'})"
    )
    console.print("Which transforms worked, by access pattern, in this demo:")
    console.print(
        f"MATCH (a:Attempt {{namespace: '{DEMO_NAMESPACE}'}})-[:FROM]->(:Kernel)-[:EXHIBITS]->(p:AccessPattern)\n"
        "RETURN p.name AS pattern, a.transform AS transform, count(*) AS attempts,\n"
        "       sum(CASE a.outcome WHEN 'kept' THEN 1 ELSE 0 END) AS kept, max(a.speedup) AS best_speedup\n"
        "ORDER BY pattern, kept DESC;",
        highlight=False,
        markup=False,
        soft_wrap=True,
    )


def _transfer_finding(settings: Settings) -> None:
    """The demo's last finding, from real hardware: KernelBench's published timings on 9 GPU folders."""
    from kernelgraph.agent.bench.transfer import transfer_finding
    from kernelgraph.agent.importers.kernelbench import SHIPPED_TIMINGS, import_timings
    from kernelgraph.client.errors import KernelGraphError

    console.rule("[bold]3. Real GPUs: does torch.compile's effect on one GPU predict it on another?")
    client = _connect(settings.model_copy(update={"namespace": KERNELBENCH_NAMESPACE}))
    try:
        with console.status("Importing KernelBench's published timings (first run only)...") as status:
            summary = import_timings(SHIPPED_TIMINGS, client, progress=lambda text: status.update(text))
            status.update("Computing the transfer matrix...")
            matrix = client.transfer_matrix()
    except KernelGraphError as exc:
        raise _fail(f"experience graph: {exc.message}", 1) from None
    finally:
        client.close()
    console.print(f"{summary.speedups} eager/compiled pairs on {len(matrix.targets)} GPUs "
                  f"(namespace {KERNELBENCH_NAMESPACE!r}; docs/transfer.md has the full study)")  # fmt: skip
    for line in transfer_finding(matrix):
        console.print(f"  {line}", highlight=False)


def register(app: typer.Typer) -> None:
    app.command("optimize")(optimize_cmd)
    app.command("demo")(demo_cmd)
