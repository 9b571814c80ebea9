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


def register(bench_app: typer.Typer) -> None:
    """Add the agent's benchmarks to the `bench` group (kernelgraph/cli.py owns it)."""
    bench_app.command("gpu")(gpu)
    bench_app.command("sandbox")(sandbox)
