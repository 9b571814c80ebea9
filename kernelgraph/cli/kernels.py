"""`kernelgraph tasks list`, `targets list`, `check` and `evaluate`: tasks, targets, verdicts."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer
from rich.console import Console
from rich.table import Table

from kernelgraph.cli.tables import readable
from kernelgraph.core.errors import CommandError

if TYPE_CHECKING:
    from kernelgraph.agent.backends.base import Backend
    from kernelgraph.agent.backends.bubblewrap import Sandbox
    from kernelgraph.agent.library import Yardsticks
    from kernelgraph.agent.results import Evaluation
    from kernelgraph.agent.targets import Target
    from kernelgraph.agent.tasks.base import Task

UNSAFE_HELP = (
    "Run model-written code WITHOUT the bubblewrap sandbox (debugging only): it can then read secrets, "
    "write files and open connections. Recorded in every result."
)

tasks_app = typer.Typer(help="Kernel tasks KernelGraph can optimize.", no_args_is_help=True)
targets_app = typer.Typer(help="Compilation targets and their measured peaks.", no_args_is_help=True)


def _fail(message: str) -> None:
    """A usage error: the app shows it as one line (one JSON object with --json) and exits 2."""
    raise CommandError(message, exit_code=2)


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
    Console().print(readable(table))


@tasks_app.command("show")
def show_task(
    task_name: str = typer.Argument(..., metavar="TASK", help="Task name (see `kernelgraph tasks list`)."),
    backend: str = typer.Option("c", "--backend", help="c | triton: whose baseline source to print."),
    as_json: bool = typer.Option(False, "--json", help="Print exactly one JSON object."),
) -> None:
    """What a kernel of TASK must look like: the C signature to export, the baseline source, the
    instances (problem sizes), the access patterns and the transforms that apply."""
    from kernelgraph.agent.tasks import UnknownTaskError, get_task
    from kernelgraph.agent.vocabulary import c_signature

    try:
        task = get_task(task_name, backend)
    except UnknownTaskError as exc:
        _fail(str(exc))
        return
    transforms: list[dict[str, Any]] = [
        {"name": t.name, "params": {k: list(v) for k, v in t.params.items()}} for t in task.transforms
    ]
    shown: dict[str, Any] = {
        "task": task.name, "family": task.family, "patterns": list(task.patterns), "description": task.description,
        "backend": backend, "c_signature": c_signature(task), "baseline_config": dict(task.baseline_config),
        "instances": [{"name": i.name, "regime": i.regime} for i in task.instances],
        "transforms": transforms,
        "baseline_source": task.source(backend, task.baseline_config),
    }  # fmt: skip
    if as_json:
        typer.echo(json.dumps(shown))
        return
    console = Console()
    console.print(f"[bold]{task.name}[/] ({task.family}): {task.description}", highlight=False)
    console.print(f"patterns: {', '.join(task.patterns)}", highlight=False)
    label = "C signature" if backend == "c" else "C signature (of the c backend's kernels)"
    console.print(f"{label}: {shown['c_signature']}", highlight=False, markup=False, soft_wrap=True)
    instances = ", ".join(f"{i.name} ({i.regime})" for i in task.instances) or "none (one full size)"
    console.print(f"instances: {instances}", highlight=False, soft_wrap=True)
    console.print("transforms: " + "; ".join(
        f"{t['name']}({', '.join(f'{k}={v}' for k, v in t['params'].items())})" for t in transforms
    ), highlight=False, markup=False, soft_wrap=True)  # fmt: skip
    console.rule(f"baseline source ({backend})")
    typer.echo(shown["baseline_source"])


@targets_app.command("list")
def list_targets(
    measure: bool = typer.Option(True, help="Probe peaks if this host has none cached."),
    refresh_peaks: bool = typer.Option(
        False,
        "--refresh-peaks",
        help="Probe again, keeping the larger of each peak (run on a quiet machine).",
    ),
) -> None:
    """List every target with its availability on this host and its measured fp32 peaks (upper bounds)."""
    from kernelgraph.agent.targets import all_targets, host_peaks

    if refresh_peaks:
        host_peaks(refresh=True)
    table = Table(title="Targets")
    columns = (
        "name",
        "kind",
        "arch",
        "available",
        "cores",
        "peak GFLOP/s",
        "peak GB/s",
        "GB/s L1/L2/LLC",
        "note",
    )
    for column in columns:
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
            "/".join(f"{v:.0f}" for level, v in t.bandwidth_gbps.items() if level != "memory") or "-",
            t.unavailable_reason,
        )
    Console().print(readable(table))


def check(
    task_name: str = typer.Argument(..., metavar="TASK", help="Task name (see `kernelgraph tasks list`)."),
    source: Path = typer.Option(..., "--source", help="C source file exporting `void kernel(...)`."),
    target_name: str = typer.Option(
        "cpu-x86-64-v3", "--target", help="Target name (see `kernelgraph targets list`)."
    ),
    as_json: bool = typer.Option(False, "--json", help="Print exactly one JSON object."),
    backend: str = typer.Option("c", "--backend", help="c | triton (Triton checks run in its interpreter)."),
    unsafe_no_sandbox: bool = typer.Option(False, "--unsafe-no-sandbox", help=UNSAFE_HELP),
) -> None:
    """Check a kernel source for correctness against the task's reference on several input sets."""
    from kernelgraph.agent.backends.bubblewrap import SandboxUnavailable
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
    chosen, confinement = _backend(backend, unsafe_no_sandbox)
    try:
        result = chosen.check(task, _read_source(source, "--source"), target)
        sandbox = confinement.label
    except SandboxUnavailable as exc:
        _fail(str(exc))
        return
    if as_json:
        typer.echo(
            json.dumps(
                {
                    "correct": result.correct,
                    "outcome": str(result.outcome),
                    "reason": result.reason,
                    "sandbox": sandbox,
                }
            )
        )
    else:
        verdict = "[green]correct[/green]" if result.correct else f"[red]{result.outcome}[/red]"
        Console().print(f"{task.name} on {target.name}: {verdict} - {result.reason}")
    if not result.correct:
        raise typer.Exit(1)


def _read_source(path: Path, option: str) -> str:
    """A kernel source file's text, or a usage error naming the option (a binary file is no source)."""
    try:
        return path.read_text()
    except UnicodeDecodeError:
        raise CommandError(
            f"{option} {path}: not a text file (a kernel source is UTF-8 text)", exit_code=2
        ) from None


def _backend(name: str, unsafe_no_sandbox: bool) -> tuple[Backend, Sandbox]:
    """The backend named on the command line, and the sandbox it runs kernels in."""
    from kernelgraph.agent.backends.bubblewrap import Sandbox

    sandbox = Sandbox(enabled=not unsafe_no_sandbox)
    if unsafe_no_sandbox:
        typer.echo("warning: --unsafe-no-sandbox: model-written code runs unconfined", err=True)
    if name == "triton":
        from kernelgraph.agent.backends.triton import TritonBackend

        return TritonBackend(sandbox=sandbox), sandbox
    if name != "c":
        _fail(f"--backend must be c or triton, not {name!r}")
    from kernelgraph.agent.backends.c import CBackend

    return CBackend(sandbox=sandbox), sandbox


def evaluate(
    task_name: str = typer.Argument(..., metavar="TASK", help="Task name (see `kernelgraph tasks list`)."),
    source: Path = typer.Option(..., "--source", help="The candidate kernel source file."),
    parent: str = typer.Option(
        "baseline",
        "--parent",
        help="`baseline` (the task's baseline source) or a source file to time against.",
    ),
    target_name: str | None = typer.Option(
        None, "--target", help="Target name (default: cpu-x86-64-v3 for c, cuda-sm90 for triton)."
    ),
    backend: str = typer.Option("c", "--backend", help="c | triton"),
    as_json: bool = typer.Option(False, "--json", help="Print exactly one JSON object."),
    unsafe_no_sandbox: bool = typer.Option(False, "--unsafe-no-sandbox", help=UNSAFE_HELP),
) -> None:
    """Evaluate a kernel as the optimization loop does: admission, correctness, timing interleaved
    with the parent on distinct inputs, counters, the outcome and its reason; a gain over a parent
    given as a file is confirmed against the task's baseline, as the loop confirms one over a parent
    a model wrote. Exit status 0 when the candidate would be kept, 1 otherwise, 2 on a usage error."""
    from kernelgraph.agent.backends.bubblewrap import SandboxUnavailable
    from kernelgraph.agent.evaluator import EVALUATOR_VERSION
    from kernelgraph.agent.loop import evaluate as evaluate_candidate
    from kernelgraph.agent.targets import UnknownTargetError, get_target
    from kernelgraph.agent.tasks import UnknownTaskError, get_task

    name = target_name or ("cuda-sm90" if backend == "triton" else "cpu-x86-64-v3")
    try:
        task = get_task(task_name, backend)
        target = get_target(name)
    except (UnknownTaskError, UnknownTargetError) as exc:
        _fail(str(exc))
        return
    if not source.is_file():
        _fail(f"--source: file not found: {source}")
    if parent == "baseline":
        parent_source = task.source(backend, task.baseline_config)
    elif Path(parent).is_file():
        parent_source = _read_source(Path(parent), "--parent")
    else:
        _fail(f"--parent: expected `baseline` or an existing source file, got {parent!r}")
        return
    chosen, confinement = _backend(backend, unsafe_no_sandbox)
    try:
        candidate = _read_source(source, "--source")
        if parent == "baseline":
            verdict = evaluate_candidate(task, chosen, target, candidate, parent_source)
        else:  # a parent's time is what its code chooses: a gain over it is confirmed against the baseline
            verdict = _evaluate_against_a_parent(task, chosen, target, candidate, parent_source)
        sandbox = confinement.label
    except SandboxUnavailable as exc:
        _fail(str(exc))
        return
    beside = _yardsticks(task, chosen, target, verdict, parent == "baseline")
    report = {"task": task.name, "target": target.name, "backend": backend, "parent": parent,
              **verdict.to_json(), "evaluator_version": EVALUATOR_VERSION, "sandbox": sandbox,
              "yardsticks": beside.to_json() if beside is not None else None}  # fmt: skip
    if as_json:
        typer.echo(json.dumps(report))
    else:
        style = "green" if verdict.outcome.value == "kept" else "red"
        gain = f" {verdict.speedup:.3f}x over the parent" if verdict.speedup else ""
        Console().print(f"{task.name} on {target.name}: [{style}]{verdict.outcome.value}[/{style}]{gain}")
        if beside is not None:
            Console().print(f"  {beside.line()}", highlight=False, markup=False)
        if verdict.reason:
            Console().print(f"  reason: {verdict.reason}", highlight=False, markup=False)
        Console().print(
            f"  sandbox: {sandbox}; evaluator version {report['evaluator_version']}", highlight=False
        )
    if verdict.outcome.value != "kept":
        raise typer.Exit(1)


def _evaluate_against_a_parent(
    task: Task, backend: Backend, target: Target, candidate: str, parent_source: str
) -> Evaluation:
    """The loop's verdict against a parent that is not trusted code: the parent timed against the
    task's baseline first, its speedup over it what a gain over the parent is confirmed against
    (agent/loop.py `evaluate`: in a comparison of its own, or beside the two with
    `BASELINE_IN_THE_COMPARISON` on)."""
    from kernelgraph.agent.loop import evaluate as evaluate_candidate
    from kernelgraph.agent.results import Evaluation, Outcome

    baseline = task.source(backend.name, task.baseline_config)
    against = backend.profile(task, parent_source, target, parent_source=baseline)
    if against.outcome != Outcome.KEPT or not against.judged or not against.parent_median_ns:
        why = f"not judged: the parent could not be timed against the baseline: {against.reason or against.outcome.value}"
        return Evaluation(Outcome.DISCARDED, why, judged=False)
    over_baseline = against.parent_median_ns / against.median_ns
    return evaluate_candidate(task, backend, target, candidate, parent_source, baseline_source=baseline,
                              parent_over_baseline=over_baseline)  # fmt: skip


def _yardsticks(
    task: Task, backend: Backend, target: Target, verdict: Evaluation, parent_is_naive: bool
) -> Yardsticks | None:
    """The candidate's time beside the library and the roofline (and the naive baseline when it was
    the parent); None when it was not timed or the target is not a CPU."""
    from kernelgraph.agent.library import yardsticks
    from kernelgraph.agent.loop import library_baseline

    profile = verdict.profile
    if profile is None or profile.static or not profile.median_ns > 0 or target.kind != "cpu":
        return None
    naive = profile.parent_median_ns if parent_is_naive else None
    library = library_baseline(task, backend, target)
    return yardsticks(task, profile.median_ns, target, naive_median_ns=naive, library=library)


def register(app: typer.Typer) -> None:
    app.add_typer(tasks_app, name="tasks")
    app.add_typer(targets_app, name="targets")
    app.command("check")(check)
    app.command("evaluate")(evaluate)
