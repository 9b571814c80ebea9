"""The service's benchmarks: `kernelgraph bench service`, `bench load`, `bench transfer`, `bench poisoning`
and `bench tables` (docs/scaling.md's tables from their saved reports)."""

from __future__ import annotations

import typer


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
    cold: bool = typer.Option(
        False,
        "--cold",
        help="skip warming Neo4j's read path first (a fresh server's first retrievals are slower)",
    ),
) -> None:
    """Benchmark the knowledge service: ingestion, retrieval latency (in-process and HTTP), ANN recall@10."""
    from kernelgraph.bench.service import main

    raise typer.Exit(
        main(measurements, as_json=as_json, quick=quick, threads=threads, results_dir=results_dir, cold=cold)
    )


def load(
    agents: int = typer.Option(64, "--agents", min=1, max=512, help="concurrent agent processes"),
    seconds: float = typer.Option(30.0, "--seconds", min=1.0, max=3600.0, help="length of each phase"),
    phase: list[str] = typer.Option(
        ["write", "loop"],
        "--phase",
        help="phases to run, in order: write (records only), loop (the loop's mix)",
    ),
    budget: int = typer.Option(8, "--budget", min=1, max=1000, help="steps per optimize run (loop phase)"),
    profile: bool = typer.Option(False, "--profile", help="sample the service with py-spy during each phase"),
    keep: bool = typer.Option(False, "--keep", help="keep the benchmark's namespace (default: delete it)"),
    warmup_seconds: float | None = typer.Option(
        None,
        "--warmup-seconds",
        min=0.0,
        max=3600.0,
        help="seconds of the loop's mix, not counted, before the phases, while a fresh server compiles "
        "(default: WARMUP_SECONDS, kernelgraph/bench/load.py); 0: none",
    ),
    as_json: bool = typer.Option(False, "--json", help="print one JSON object (progress goes to stderr)"),
    results_dir: str = typer.Option("results", "--results-dir", help="where the JSON results are saved"),
) -> None:
    """A team's day: N agent processes over HTTP on a served KernelGraph (write-only, then the loop's mix).

    Reports throughput, p50/p95/p99 per route, answers by status, the retrieve:record ratio, CPU per
    process, and whether every acknowledged attempt is stored (kernelgraph/bench/load.py).
    """
    from dataclasses import replace

    from kernelgraph.bench.load import PHASES, LoadOptions, main

    unknown = [p for p in phase if p not in PHASES]
    if unknown:
        raise typer.BadParameter(
            f"unknown phase(s) {unknown}; choose from {list(PHASES)}", param_hint="--phase"
        )
    options = LoadOptions(agents=agents, seconds=seconds, phases=tuple(phase), budget=budget, profile=profile,
                          keep=keep)  # fmt: skip
    if warmup_seconds is not None:
        options = replace(options, warmup_seconds=warmup_seconds)
    raise typer.Exit(main(options, as_json=as_json, results_dir=results_dir))


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

    from kernelgraph.bench.reports import save_report
    from kernelgraph.bench.transfer import (
        BASELINES,
        METHODS,
        OURS,
        leave_one_target_out,
        plot_transfer_matrix,
    )
    from kernelgraph.cli.graph import cli_errors, fail, open_store
    from kernelgraph.core import settings as settings_module
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
    path = save_report(report, Path(results_dir), "transfer")
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


def tables(
    check: bool = typer.Option(
        False, "--check", help="only check that the document is up to date (exit 1 if not)"
    ),
    doc: str = typer.Option("docs/scaling.md", "--doc", help="the document holding the generated section"),
    results_dir: str = typer.Option("results", "--results-dir", help="where the saved reports are"),
) -> None:
    """Regenerate docs/scaling.md's tables (one row per saved run of `bench service` and `bench load`)."""
    from pathlib import Path

    from kernelgraph.bench.tables import render, update

    path = Path(doc)
    if not path.is_file():
        raise typer.BadParameter(f"no such file: {doc}", param_hint="--doc")
    try:
        if check:
            stale = render(Path(results_dir)) not in path.read_text()
            typer.echo(f"{doc}: {'out of date: run `kernelgraph bench tables`' if stale else 'up to date'}")
            raise typer.Exit(1 if stale else 0)
        changed = update(path, Path(results_dir))
    except ValueError as exc:
        raise typer.BadParameter(str(exc), param_hint="--doc") from None
    typer.echo(f"{doc}: {'tables rewritten' if changed else 'already up to date'}")


def poisoning(
    states: int = typer.Option(
        2, "--states", min=1, max=50, help="measured states the honest key works from"
    ),
    repeats: int = typer.Option(
        2, "--repeats", min=1, max=20, help="honest attempts per state and transform"
    ),
    as_json: bool = typer.Option(False, "--json", help="print one JSON object (progress goes to stderr)"),
    results_dir: str = typer.Option("results", "--results-dir", help="where the JSON results are saved"),
) -> None:
    """Can one writer key spoil another's retrieval? 1, 10 and 100 poisoned attempts per honest one
    (kernelgraph/bench/poisoning.py); exit code 1 when the honest key's top three transforms changed."""
    from kernelgraph.bench.poisoning import main

    raise typer.Exit(main(states=states, repeats=repeats, as_json=as_json, results_dir=results_dir))


def register(bench_app: typer.Typer) -> None:
    """Add the service's benchmarks to the `bench` group (kernelgraph/cli/__init__.py owns it)."""
    bench_app.command("service")(service)
    bench_app.command("load")(load)
    bench_app.command("transfer")(transfer_bench)
    bench_app.command("tables")(tables)
    bench_app.command("poisoning")(poisoning)
