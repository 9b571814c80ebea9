"""The agent's benchmarks: `kernelgraph bench gpu` and `kernelgraph bench sandbox`."""

from __future__ import annotations

import typer


def gpu(
    target: str = typer.Option("cuda-sm90", "--target", help="the CUDA target matching the local GPU"),
    tasks: str = typer.Option("softmax,matmul,rmsnorm", "--tasks", help="comma-separated Triton tasks"),
    budget_s: float = typer.Option(300.0, "--budget-s", help="stop starting new tasks past this"),
) -> None:
    """Check the Triton backend end to end on a GPU: compile, correctness, timing (L2 flushed), ncu."""
    from kernelgraph.agent.bench.gpu import run_gpu_bench

    raise typer.Exit(run_gpu_bench(target, [t for t in tasks.split(",") if t], budget_s))


def sandbox(
    task: str = typer.Option("rmsnorm", "--task", help="the C task whose baseline is evaluated"),
    target: str = typer.Option("cpu-x86-64-v2", "--target", help="the CPU target to build and time for"),
    repeats: int = typer.Option(5, "--repeats", min=1, max=50, help="evaluations per mode (interleaved)"),
    as_json: bool = typer.Option(False, "--json", help="print one JSON object (progress goes to stderr)"),
    results_dir: str = typer.Option("results", "--results-dir", help="where the JSON results are saved"),
) -> None:
    """What the sandbox costs: overhead per evaluation step and timing noise (rel. IQR) with and without."""
    import json
    from pathlib import Path

    from kernelgraph.agent.backends.bubblewrap import SandboxUnavailable
    from kernelgraph.agent.bench.sandbox_bench import render, run_bench
    from kernelgraph.client.reports import save_report

    try:
        result = run_bench(task, target, repeats)
    except SandboxUnavailable as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(2) from None
    path = save_report(result, Path(results_dir), "sandbox-bench")
    if as_json:
        typer.echo(json.dumps({k: v for k, v in result.items() if k != "runs"} | {"saved": str(path)}))
    else:
        typer.echo(render(result))
        typer.echo(f"saved to {path}")


STUDY_TASKS = "layernorm,matmul,softmax,elementwise_chain,transpose,matvec,reduction"


def landscape(
    tasks: str = typer.Option(STUDY_TASKS, "--tasks", help="comma-separated C tasks with instances"),
    label: str = typer.Option("A", "--label", help="names this measurement; measure twice for noise"),
    target: str = typer.Option("cpu-x86-64-v2", "--target", help="the CPU target to build and time for"),
    directory: str = typer.Option("results/landscapes", "--dir", help="where landscapes are kept"),
    fraction: float = typer.Option(
        1.0, "--fraction", min=0.5, max=1.0, help="share of each config space to measure (>= half)"
    ),
) -> None:
    """Measure every config of each task at each of its instances (resumable; see docs/results.md)."""
    from pathlib import Path

    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from kernelgraph.agent.bench.landscapes import measure_landscape
    from kernelgraph.agent.targets import get_target
    from kernelgraph.agent.tasks import get_task

    chosen = [get_task(name) for name in tasks.split(",") if name]
    for task in chosen:
        if not task.instances:
            typer.echo(f"error: --tasks: task {task.name!r} defines no instances", err=True)
            raise typer.Exit(2)
    cpu = get_target(target)
    columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
    with Progress(*columns) as progress:
        for task in chosen:
            path = measure_landscape(task, cpu, Path(directory), label, fraction=fraction, progress=progress)
            progress.console.print(f"{task.name}: {path}")


def quality(
    quick: bool = typer.Option(
        False, "--quick", help="two tasks, a budget of 2: the report's shape, cheaply"
    ),
    as_json: bool = typer.Option(False, "--json", help="print one JSON object (progress goes to stderr)"),
    tasks: str = typer.Option("", "--tasks", help="comma-separated C tasks (default: all; --quick: two)"),
    budget: int = typer.Option(
        0, "--budget", min=0, max=500, help="attempts per task (default 32; --quick 2)"
    ),
    target: str = typer.Option("cpu-native", "--target", help="the CPU target to build and time for"),
    results_dir: str = typer.Option("results", "--results-dir", help="where the JSON report is saved"),
    docs: bool = typer.Option(False, "--docs", help="write the table into docs/quality.md and README.md"),
) -> None:
    """The agent's best kernel per task against the library and the roofline, measured in one run."""
    import json
    from pathlib import Path

    from rich.console import Console

    from kernelgraph.agent.bench.quality import run_quality, table, write_table
    from kernelgraph.agent.commands.agent_cmd import connect_or_exit, exit_with, make_backend
    from kernelgraph.agent.targets import UnknownTargetError, get_target
    from kernelgraph.agent.tasks import all_tasks
    from kernelgraph.client.reports import code_version, save_report
    from kernelgraph.client.settings import get_settings

    known = [t.name for t in all_tasks("c")]
    chosen = [name for name in tasks.split(",") if name]
    unknown = [name for name in chosen if name not in known]
    if unknown:
        raise exit_with(f"--tasks: unknown C task {unknown[0]!r}; known: {', '.join(known)}")
    try:
        cpu = get_target(target)
    except UnknownTargetError as exc:
        raise exit_with(f"--target: {exc}") from None
    if cpu.kind != "cpu" or not cpu.available:
        raise exit_with(f"--target: {target!r} is not an available CPU target ({cpu.unavailable_reason})")
    backend = make_backend("c")
    # Counters (cachegrind) would double each attempt's cost; retrieval uses the timing counters.
    backend.counters = False  # type: ignore[attr-defined]
    console = Console(stderr=True)
    client = connect_or_exit(get_settings())
    try:
        report = run_quality(cpu, backend, client, quick=quick, tasks=chosen or None, budget=budget or None,  # type: ignore[arg-type]
                             console=console)  # fmt: skip
    finally:
        client.close()
    report["command"] = "kernelgraph bench quality" + (" --quick" if quick else "")
    report["code"] = code_version()
    path = save_report(report, Path(results_dir), "bench-quality-quick" if quick else "bench-quality")
    if docs:
        root = Path(__file__).resolve().parents[2]
        for page in (root / "docs" / "quality.md", root / "README.md"):
            write_table(report, page)
    if as_json:
        typer.echo(json.dumps(report | {"saved": str(path)}, default=str))
    else:
        typer.echo(table(report))
        typer.echo(f"saved to {path}")


def register(bench_app: typer.Typer) -> None:
    """Add the agent's benchmarks to the `bench` group (kernelgraph/cli.py owns it)."""
    bench_app.command("gpu")(gpu)
    bench_app.command("sandbox")(sandbox)
    bench_app.command("landscape")(landscape)
    bench_app.command("quality")(quality)
