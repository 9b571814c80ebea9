"""`kernelgraph bench ...`: benchmarks. Other areas add their commands to `bench_app`."""

from __future__ import annotations

import typer

bench_app = typer.Typer(help="Benchmarks and end-to-end checks.", no_args_is_help=True)


@bench_app.command("gpu")
def gpu(
    target: str = typer.Option("cuda-sm90", "--target", help="the CUDA target matching the local GPU"),
    tasks: str = typer.Option("softmax,matmul,rmsnorm", "--tasks", help="comma-separated Triton tasks"),
    budget_s: float = typer.Option(300.0, "--budget-s", help="stop starting new tasks past this"),
) -> None:
    """Check the Triton backend end to end on a GPU: compile, correctness, timing (L2 flushed), ncu."""
    from agent.bench.gpu import run_gpu_bench

    raise typer.Exit(run_gpu_bench(target, [t for t in tasks.split(",") if t], budget_s))


@bench_app.command("service")
def service(
    measurements: int = typer.Option(100_000, "--measurements", min=50, help="measurements to generate and ingest"),
    as_json: bool = typer.Option(False, "--json", help="print one JSON object (progress goes to stderr)"),
    quick: bool = typer.Option(False, "--quick", help="fewer retrieval and recall queries (25 instead of 200)"),
    threads: int = typer.Option(2, "--threads", min=1, max=16, help="ingestion threads"),
    results_dir: str = typer.Option("results", "--results-dir", help="where the JSON results are saved"),
) -> None:
    """Benchmark the knowledge service: ingestion, retrieval latency (in-process and HTTP), ANN recall@10."""
    from agent.bench.service_bench import main

    raise typer.Exit(main(measurements, as_json=as_json, quick=quick, threads=threads, results_dir=results_dir))


def register(app: typer.Typer) -> None:
    app.add_typer(bench_app, name="bench")
