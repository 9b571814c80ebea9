"""`kernelgraph tasks list`, `kernelgraph targets list` and `kernelgraph check`: tasks, targets, verdicts."""

from __future__ import annotations

import json
from pathlib import Path

import typer
from rich.console import Console
from rich.table import Table

tasks_app = typer.Typer(help="Kernel tasks KernelGraph can optimize.", no_args_is_help=True)
targets_app = typer.Typer(help="Compilation targets and their measured peaks.", no_args_is_help=True)


def _fail(message: str) -> None:
    typer.echo(f"error: {message}", err=True)
    raise typer.Exit(2)


@tasks_app.command("list")
def list_tasks(
    backend: str = typer.Option("c", help="Only tasks that render source for this backend."),
) -> None:
    """List every task: name, access-pattern family, patterns and applicable transforms."""
    from kernelgraph.agent.tasks import all_tasks

    table = Table(title=f"Kernel tasks ({backend} backend)")
    for column in ("name", "family", "patterns", "transforms"):
        table.add_column(column)
    for task in all_tasks(backend):
        table.add_row(
            task.name, task.family, ", ".join(task.patterns), ", ".join(t.name for t in task.transforms)
        )
    Console().print(table)


@targets_app.command("list")
def list_targets(
    measure: bool = typer.Option(True, help="Probe peaks if this host has none cached."),
) -> None:
    """List every target with its availability on this host and its measured fp32 peaks."""
    from kernelgraph.agent.targets import all_targets

    table = Table(title="Targets")
    for column in ("name", "kind", "arch", "available", "cores", "peak GFLOP/s", "peak GB/s", "note"):
        table.add_column(column)
    for t in all_targets(measure=measure):
        table.add_row(
            t.name,
            t.kind,
            t.arch,
            "yes" if t.available else "no",
            str(t.cores or ""),
            f"{t.peak_gflops:.1f}" if t.peak_gflops else "-",
            f"{t.peak_gbps:.1f}" if t.peak_gbps else "-",
            t.unavailable_reason,
        )
    Console().print(table)


def check(
    task_name: str = typer.Argument(..., metavar="TASK", help="Task name (see `kernelgraph tasks list`)."),
    source: Path = typer.Option(..., "--source", help="C source file exporting `void kernel(...)`."),
    target_name: str = typer.Option(
        "cpu-x86-64-v3", "--target", help="Target name (see `kernelgraph targets list`)."
    ),
    as_json: bool = typer.Option(False, "--json", help="Print exactly one JSON object."),
    backend: str = typer.Option("c", "--backend", help="c | triton (Triton checks run in its interpreter)."),
) -> None:
    """Check a kernel source for correctness against the task's reference on several input sets."""
    from kernelgraph.agent.backends.c import CBackend
    from kernelgraph.agent.targets import UnknownTargetError, get_target
    from kernelgraph.agent.tasks import UnknownTaskError, get_task

    try:
        task = get_task(task_name, backend)
        target = get_target(target_name, measure=False)
    except (UnknownTaskError, UnknownTargetError) as exc:
        _fail(str(exc))
        return
    if not source.is_file():
        _fail(f"source file not found: {source}")
    if backend == "triton":
        from kernelgraph.agent.backends.triton import TritonBackend

        result = TritonBackend().check(task, source.read_text(), target)
    else:
        result = CBackend().check(task, source.read_text(), target)
    if as_json:
        typer.echo(
            json.dumps({"correct": result.correct, "outcome": str(result.outcome), "reason": result.reason})
        )
    else:
        verdict = "[green]correct[/green]" if result.correct else f"[red]{result.outcome}[/red]"
        Console().print(f"{task.name} on {target.name}: {verdict} - {result.reason}")
    if not result.correct:
        raise typer.Exit(1)


def register(app: typer.Typer) -> None:
    app.add_typer(tasks_app, name="tasks")
    app.add_typer(targets_app, name="targets")
    app.command("check")(check)
