"""`kernelgraph optimize`: the agent from the terminal (the demo, which also imports published data
through the service, is kernelgraph/cli/demo.py).

It reaches the experience graph through `kernelgraph.client.connect(settings)`: over HTTP when
KERNELGRAPH_SERVICE_URL is set, else in-process on the configured (or local) Neo4j.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.console import Console
from rich.table import Table

from kernelgraph.cli.graph import fail
from kernelgraph.cli.tables import readable

if TYPE_CHECKING:
    from kernelgraph.agent.backends.base import Backend
    from kernelgraph.agent.loop import OptimizeResult
    from kernelgraph.agent.proposers.base import Proposer
    from kernelgraph.client import ExperienceClient
    from kernelgraph.core.settings import AgentSettings, Settings

console = Console()
err = Console(stderr=True)

PROPOSERS = ("memoryless", "experience", "text", "hybrid", "llm")


@contextmanager
def agent_errors(client: ExperienceClient) -> Iterator[None]:
    """Where a command runs the agent on `client`, which it closes at the end: a run that cannot start
    (`OptimizeError`) or an error of the experience graph ends the command as one line, exit 1."""
    from kernelgraph.agent.loop import OptimizeError
    from kernelgraph.core.errors import KernelGraphError

    try:
        yield
    except OptimizeError as exc:
        raise fail(str(exc)) from None
    except KernelGraphError as exc:
        raise fail(f"experience graph: {exc.message}") from None
    finally:
        client.close()


def make_backend(name: str, *, quick: bool = True) -> Backend:
    """The backend by name; `quick` caps the trials (still 20 at least: the evaluator's floor) and the time.

    Fails here, before any run starts, when the sandbox every kernel runs in is not installed."""
    from kernelgraph.agent.backends.bubblewrap import Sandbox, SandboxUnavailable

    try:
        Sandbox().check_available()
    except SandboxUnavailable as exc:
        raise fail(str(exc), 2) from None
    if name == "c":
        from kernelgraph.agent.backends.c import CBackend
        from kernelgraph.agent.backends.timing import FAST_TIMING, TimingPlan

        plan = FAST_TIMING if quick else TimingPlan()
        return CBackend(timing=plan)
    if name == "triton":
        from kernelgraph.agent.backends.triton import TritonBackend

        return TritonBackend()
    raise fail(f"unknown backend {name!r}; known: c, triton", 2)


def make_proposer(
    kind: str, client: ExperienceClient, settings: AgentSettings, seed: int, exclude_task: str | None = None
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
            raise fail("the llm proposer needs ANTHROPIC_API_KEY in the environment", 2)
        retriever = ExperienceProposer(client, seed=seed, exclude_task=exclude_task)
        return LLMProposer.from_settings(settings, retriever=retriever, seed=seed)
    raise fail(f"unknown proposer {kind!r}; known: {', '.join(PROPOSERS)}", 2)


def connect_or_exit(settings: Settings, namespace: str | None = None) -> ExperienceClient:
    """The experience client of this command; `namespace` (--namespace) instead of the configured one
    (over HTTP it is sent with the key, which must be an admin's to name another namespace)."""
    from kernelgraph.client import KernelGraphClient, connect
    from kernelgraph.core.errors import KernelGraphError

    try:
        if namespace is not None and settings.service_url:
            key = settings.api_key.get_secret_value() if settings.api_key else None
            return KernelGraphClient(settings.service_url, key, namespace=namespace)
        if namespace is not None:
            settings = settings.model_copy(update={"namespace": namespace})
        return connect(settings)
    except KernelGraphError as exc:
        raise fail(f"cannot reach the experience graph: {exc.message}") from None
    except Exception as exc:  # the driver's own errors (auth, unreachable) carry no domain type yet
        raise fail(f"cannot reach the experience graph: {exc}") from None


def result_table(results: list[OptimizeResult], title: str) -> Table:
    """The best beside the library first, then baseline, best, speedup over naive and attempts by
    outcome, one column per run."""
    table = Table(title=title)
    table.add_column("")
    for r in results:
        table.add_column(f"{r.task} · {r.proposer}", justify="right")
    untimed = "not timed (no GPU)"
    rows: list[tuple[str, list[str]]] = [
        ("library", [_library_cell(r) for r in results]),
        ("best vs library", [_versus_library(r) for r in results]),
        (
            "best, share of roofline",
            [
                f"{100 * r.best_yardsticks.roofline_fraction:.1f}%"
                if r.best_yardsticks is not None and r.best_yardsticks.roofline_fraction is not None
                else "-"
                for r in results
            ],
        ),
        ("baseline", [untimed if r.static_only else f"{r.baseline_ns / 1e6:.2f} ms" for r in results]),
        ("best", [untimed if r.static_only else f"{r.best_ns / 1e6:.2f} ms" for r in results]),
        (
            "speedup over naive (final re-timing)"
            if all(r.final_interleaved for r in results)
            else "speedup over naive",
            [untimed if r.static_only else f"[bold]{r.speedup:.2f}x[/bold]" for r in results],
        ),
        (
            "  so far (kept steps chained)",
            [untimed if r.static_only else f"{r.chained_speedup:.2f}x" for r in results],
        ),
        ("attempts", [str(r.attempts) for r in results]),
    ]
    for outcome in results[0].outcomes if results else {}:
        rows.append((f"  {outcome}", [str(r.outcomes[outcome]) for r in results]))
    rows.append(("so far after each attempt", [" ".join(f"{x:.1f}" for x in r.curve) for r in results]))
    for label, cells in rows:
        table.add_row(label, *cells)
    if any(r.final_interleaved for r in results):
        table.caption = ("speedup: the best kernel timed against the baseline, interleaved, at the end (the final "
                         "re-timing); so far: the kept steps' own speedups multiplied, as shown live")  # fmt: skip
    return readable(table)


def _library_cell(result: OptimizeResult) -> str:
    """The library's time and what it is ("0.157 ms torch 2.5.1, 2 threads"), or why there is none."""
    lib = result.library
    if lib is None:
        return "none (not a CPU target)"
    if lib.median_ns is None:
        return f"{lib.library}: {lib.outcome.value}"
    return f"{lib.median_ns / 1e6:.3f} ms {lib.label}"


def _versus_library(result: OptimizeResult) -> str:
    marks = result.best_yardsticks
    if marks is None or marks.speedup_vs_library is None:
        return "-"
    return f"[bold]{marks.speedup_vs_library:.2f}x[/bold]"


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
    namespace: Annotated[
        str | None,
        typer.Option(
            "--namespace", "-n", help="Namespace to read and record in (default: KERNELGRAPH_NAMESPACE)."
        ),
    ] = None,
) -> None:
    """Optimize one task on one target with a budget of attempts; every attempt lands in the graph."""
    from kernelgraph.agent.loop import optimize
    from kernelgraph.agent.targets import UnknownTargetError, get_target
    from kernelgraph.agent.tasks import UnknownTaskError, get_task
    from kernelgraph.core.settings import get_settings

    if proposer_kind not in PROPOSERS:
        raise fail(f"unknown proposer {proposer_kind!r}; known: {', '.join(PROPOSERS)}", 2)
    try:
        task = get_task(task_name, backend_name)
        target = get_target(target_name)
    except (UnknownTaskError, UnknownTargetError) as exc:
        raise fail(str(exc), 2) from None
    if not target.available:
        raise fail(f"target {target.name} is unavailable here: {target.unavailable_reason}", 2)
    if namespace is not None:
        from pydantic import TypeAdapter, ValidationError

        from kernelgraph.core.models import Namespace

        try:
            TypeAdapter(Namespace).validate_python(namespace)
        except ValidationError:
            raise fail(
                f"--namespace: {namespace!r} is not a namespace (1-64 lower-case letters, digits, '_' and '-')",
            ) from None
    settings = get_settings()
    backend = make_backend(backend_name, quick=not full_timing)
    client = connect_or_exit(settings, namespace)
    with agent_errors(client):
        proposer = make_proposer(proposer_kind, client, settings, seed, exclude_task)
        result = optimize(
            task, backend, target, proposer, client, budget, seed, console=None if as_json else console
        )
    if out is not None:
        out.write_text(result.best_source)
    if as_json:
        typer.echo(json.dumps({**result.to_json(), "best_source_path": str(out) if out else None}))
        return
    console.print(result_table([result], f"{task.name} on {target.name}"))
    if out is not None:
        console.print(f"best source written to {out}")
    if result.not_judged:
        err.print(f"[yellow]warning:[/] {result.not_judged} attempts were not judged and not recorded: two kernels "
                  "are compared only on free cores and a parent only near its fastest (each step's reason says "
                  "which)")  # fmt: skip
    if result.unrecorded:
        err.print(f"[yellow]warning:[/] {result.unrecorded} attempts could not be recorded (see the log)")


def register(app: typer.Typer) -> None:
    app.command("optimize")(optimize_cmd)
