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
    from kernelgraph.agent.bench.gpu import run_gpu_bench

    raise typer.Exit(run_gpu_bench(target, [t for t in tasks.split(",") if t], budget_s))


@bench_app.command("service")
def service(
    measurements: int = typer.Option(
        100_000, "--measurements", min=50, help="measurements to generate and ingest"
    ),
    as_json: bool = typer.Option(False, "--json", help="print one JSON object (progress goes to stderr)"),
    quick: bool = typer.Option(
        False, "--quick", help="fewer retrieval and recall queries (25 instead of 200)"
    ),
    threads: int = typer.Option(2, "--threads", min=1, max=16, help="ingestion threads"),
    results_dir: str = typer.Option("results", "--results-dir", help="where the JSON results are saved"),
) -> None:
    """Benchmark the knowledge service: ingestion, retrieval latency (in-process and HTTP), ANN recall@10."""
    from kernelgraph.agent.bench.service_bench import main

    raise typer.Exit(
        main(measurements, as_json=as_json, quick=quick, threads=threads, results_dir=results_dir)
    )


@bench_app.command("ablation")
def ablation(
    budget: int | None = typer.Option(
        None,
        "--budget",
        min=1,
        max=64,
        help="K: attempts per arm, memoryless also runs 4K (default 6; 3 with --quick)",
    ),
    seeds: int | None = typer.Option(
        None, "--seeds", min=1, max=10, help="seeds per arm and task (default 3; 2 with --quick)"
    ),
    quick: bool = typer.Option(
        False, "--quick", help="3 tasks, K=3, 2 seeds, no transfer part (under 5 minutes)"
    ),
    target: str = typer.Option(
        "cpu-x86-64-v2", "--target", help="target the held-out tasks are optimized on"
    ),
    transfer_from: str = typer.Option(
        "cpu-x86-64-v4", "--transfer-from", help="target of the transfer experience ('' = skip)"
    ),
    tasks: str = typer.Option("", "--tasks", help="comma-separated tasks (default: all CPU tasks)"),
    as_json: bool = typer.Option(False, "--json", help="print one JSON object (progress goes to stderr)"),
    results_dir: str = typer.Option("results", "--results-dir", help="where the JSON report is saved"),
    docs: bool = typer.Option(False, "--docs", help="also write docs/results.md and docs/img/ablation.png"),
) -> None:
    """Matched-compute ablation: experience@K against memoryless@K and @4K, text@K and hybrid@K, held out by family."""
    import json
    import shlex
    import sys
    from pathlib import Path

    from rich.console import Console

    from kernelgraph.agent.bench import ablation as study
    from kernelgraph.agent.commands.graph import cli_errors, open_store
    from kernelgraph.agent.targets import get_target
    from kernelgraph.agent.tasks import all_tasks, get_task
    from kernelgraph.service.embeddings import MiniLMEmbedder
    from kernelgraph.service.knowledge import KnowledgeService

    budget = budget or (3 if quick else 6)
    seeds = seeds or (2 if quick else 3)
    if quick:
        transfer_from = ""
    chosen = [get_task(t) for t in tasks.split(",") if t] or (
        [get_task(t) for t in study.QUICK_TASKS] if quick else all_tasks("c")
    )
    console = Console(stderr=as_json)
    command = "kernelgraph bench ablation " + " ".join(shlex.quote(a) for a in sys.argv[3:])
    with open_store() as store, cli_errors():
        report = study.run_ablation(
            KnowledgeService(store, MiniLMEmbedder()), target=get_target(target), budget=budget, seeds=seeds,
            tasks=chosen, transfer_source=get_target(transfer_from) if transfer_from else None,
            console=console, command=command,
        )  # fmt: skip
    path = study.save_json(report, Path(results_dir))
    if docs:
        study.plot(
            report["ablation"], Path("docs/img/ablation.png"), f"Held-out tasks on {target}, K={budget}"
        )
        Path("docs/results.md").write_text(study.results_markdown(report, command, "img/ablation.png"))
    if as_json:
        print(
            json.dumps(
                {k: report["ablation"][k] for k in ("budget", "seeds", "arms")} | {"goals": report["goals"]}
            )
        )
        return
    from rich.table import Table

    table = Table("arm", "attempts", "geomean speedup", "seed spread", "attempts to 90%", title="Ablation")
    for name, arm in report["ablation"]["arms"].items():
        spread = arm["seed_spread"]
        reach = f"{arm['attempts_to_90pct']:.1f}" if arm["attempts_to_90pct"] is not None else "never"
        table.add_row(name, str(arm["budget"]), f"{arm['geomean_speedup']:.2f}x",
                      f"{spread['min']:.2f}-{spread['max']:.2f}x", reach)  # fmt: skip
    console.print(table)
    console.print(
        f"report saved to {path} ({report['wall_s']:.0f} s, {report['measured_variants']} variants measured)"
    )


@bench_app.command("sandbox")
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
    from kernelgraph.agent.bench.sandbox_bench import render, run_bench, save_results

    try:
        result = run_bench(task, target, repeats)
    except SandboxUnavailable as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(2) from None
    path = save_results(result, Path(results_dir))
    if as_json:
        typer.echo(json.dumps({k: v for k, v in result.items() if k != "runs"} | {"saved": str(path)}))
    else:
        typer.echo(render(result))
        typer.echo(f"saved to {path}")


def register(app: typer.Typer) -> None:
    app.add_typer(bench_app, name="bench")


@bench_app.command("transfer")
def transfer_bench(
    namespace: str | None = typer.Option(
        None,
        "--namespace",
        "-n",
        help="namespace holding the imported timings (default: KERNELGRAPH_NAMESPACE)",
    ),
    resamples: int = typer.Option(1_000, "--resamples", min=100, max=10_000, help="bootstrap resamples"),
    as_json: bool = typer.Option(False, "--json", help="print one JSON object (progress goes to stderr)"),
    results_dir: str = typer.Option("results", "--results-dir", help="where the JSON report is saved"),
    plot: str = typer.Option("", "--plot", help="also write the transfer matrix heat map (PNG) here"),
) -> None:
    """Leave one target out: predict each GPU's torch.compile speedups from the others, against two baselines.

    Import the data first (`kernelgraph import kernelbench-timing`). For every target: Spearman of
    predicted vs measured log speedup and helps/hurts accuracy of the transfer-weighted prediction, the
    global mean effect of the transform and the nearest target by architecture, with bootstrap CIs.
    """
    import json
    from pathlib import Path

    from rich.console import Console
    from rich.table import Table

    from kernelgraph.agent.bench.ablation import save_json
    from kernelgraph.agent.bench.transfer import (
        BASELINES,
        METHODS,
        OURS,
        leave_one_target_out,
        plot_transfer_matrix,
    )
    from kernelgraph.agent.commands.graph import cli_errors, fail, open_store
    from kernelgraph.client import settings as settings_module
    from kernelgraph.service.knowledge import KnowledgeService
    from kernelgraph.service.transfer import transfer_matrix

    err = Console(stderr=True)
    settings = settings_module.get_settings()
    space = namespace or settings.namespace
    with open_store(settings) as store, cli_errors():
        targets, gains, _ = KnowledgeService(store).transfer_data([space])
    if len(targets) < 3:
        raise fail(f"namespace {space!r} holds measured effects on {len(targets)} target(s); need 3 or more "
                   "(run `kernelgraph import kernelbench-timing` first)")  # fmt: skip
    with err.status("Leave one target out...") as status:
        report = leave_one_target_out(targets, gains, resamples, say=lambda text: status.update(text))
    report["namespace"] = space
    if plot:
        names = [t.name for t in targets]
        plot_transfer_matrix(names, [t.family for t in targets], transfer_matrix(gains, names, resamples=0),
                             Path(plot), "Transfer of torch.compile log speedups between GPUs (all configurations)")  # fmt: skip
        err.print(f"heat map written to {plot}")
    path = save_json(report, Path(results_dir), prefix="transfer")
    err.print(f"saved {path}")
    if as_json:
        print(json.dumps(report, indent=2))
        return

    def show(value: float | None, ci: list[float | None] | tuple[float | None, float | None]) -> str:
        if value is None:
            return "undefined"
        low, high = ci
        return (
            f"{value:.3f} [{low:.3f}, {high:.3f}]" if low is not None and high is not None else f"{value:.3f}"
        )

    table = Table("held-out target", "effects", *[f"{m}\nrank corr [95% CI]" for m in METHODS],
                  *[f"beats {b}?" for b in BASELINES], title="Leave one target out: predicted vs measured log speedup")  # fmt: skip
    accuracy = Table(
        "held-out target", *[f"{m}\nhelps/hurts right" for m in METHODS], title="Helps/hurts accuracy"
    )
    for row in report["held_out"]:
        scores = row["methods"]
        table.add_row(row["target"], str(row["effects"]),
                      *[show(scores[m]["rank_correlation"], scores[m]["rank_correlation_ci"]) for m in METHODS],
                      *[row["verdict"][b] for b in BASELINES])  # fmt: skip
        accuracy.add_row(row["target"], *[show(scores[m]["helps_hurts_accuracy"], scores[m]["helps_hurts_accuracy_ci"])
                                          for m in METHODS])  # fmt: skip
    console = Console()
    console.print(table)
    console.print(accuracy)
    beaten = report["summary"]["beats_with_ci_above_zero"]
    console.print(f"{OURS} beats, with a paired 95% CI above 0, " + ", ".join(
        f"{name} on {count}/{len(report['held_out'])}" for name, count in beaten.items()))  # fmt: skip
