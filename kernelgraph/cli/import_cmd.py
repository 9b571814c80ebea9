"""`kernelgraph import ...` (published experience into the graph) and `kernelgraph transfer`."""

from __future__ import annotations

import json
import math
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.table import Table

from kernelgraph.cli.graph import cli_errors, fail
from kernelgraph.cli.tables import readable

console = Console()
err = Console(stderr=True)

import_app = typer.Typer(help="Import published experience into the graph.", no_args_is_help=True)

NamespaceOption = Annotated[
    str | None,
    typer.Option(
        "--namespace", "-n", help="Namespace to use (default: KERNELGRAPH_NAMESPACE, or the API key's)."
    ),
]
JsonOption = Annotated[bool, typer.Option("--json", help="Print one JSON object instead of tables.")]


@contextmanager
def open_client(namespace: str | None) -> Iterator[Any]:
    """The experience client for this command: HTTP when KERNELGRAPH_SERVICE_URL is set, else in-process."""
    from kernelgraph.client import KernelGraphClient
    from kernelgraph.core import settings as settings_module
    from kernelgraph.service.auth import check_namespace
    from kernelgraph.service.inprocess import InProcessClient
    from kernelgraph.service.knowledge import KnowledgeService
    from kernelgraph.service.store import GraphStore, open_driver

    settings = settings_module.get_settings()
    with cli_errors():
        if namespace is not None:
            check_namespace(namespace)
        if settings.service_url:
            key = settings.api_key.get_secret_value() if settings.api_key else None
            with KernelGraphClient(settings.service_url, key, namespace=namespace) as client:
                yield client
            return
        driver = open_driver(settings)
        try:
            knowledge = KnowledgeService(GraphStore(driver, settings.neo4j_database))
            yield InProcessClient(knowledge, namespace or settings.namespace)
        finally:
            driver.close()


@import_app.command("kernelbench-timing")
def import_kernelbench_timing(
    directory: Annotated[
        Path | None,
        typer.Argument(
            help="KernelBench timing folder (one folder per hardware), one hardware folder, or a KernelBench "
            "checkout (its results/timing is used). Default: the copy shipped with KernelGraph."
        ),
    ] = None,
    namespace: NamespaceOption = None,
    as_json: JsonOption = False,
) -> None:
    """Import KernelBench's published baseline timings: eager PyTorch -> each torch.compile configuration.

    A number's target is the GPU model its row names on the machine its folder names (`<folder>:<model>`).
    An attempt pairs eager and compiled times measured on the same target; a null compiled entry is a
    failed attempt; a time with no partner on its target is kept as a lone measurement. Malformed files
    are reported and skipped whole; re-importing writes nothing (keys are deterministic).
    """
    from kernelgraph.service.importers.kernelbench import SHIPPED_TIMINGS, import_timings

    root = directory if directory is not None else SHIPPED_TIMINGS
    if not root.is_dir():
        raise fail(f"{root}: not a directory")
    with open_client(namespace) as client, cli_errors():
        if as_json:
            summary = import_timings(root, client)
        else:
            with console.status("Importing KernelBench timings...") as status:
                summary = import_timings(root, client, progress=lambda text: status.update(text))
    data = summary.as_dict()
    if as_json:
        print(json.dumps(data, indent=2))
        return
    files = Table("file", "rows", "null", "imported", "paired", "alone", "failed", "other GPU", "GPU models",
                  title=f"KernelBench timing files in {summary.root}")  # fmt: skip
    files.columns[0].no_wrap = True
    for hw in summary.hardware:
        for item in hw.files:
            models = ", ".join(f"{name.split(':', 1)[-1]} {count}" for name, count in item.targets.items())
            config = item.config.removeprefix("torch_compile:")
            files.add_row(f"{hw.folder}/{config}", str(item.rows), str(item.nulls), str(item.imported),
                          str(item.in_attempts), str(item.alone), str(item.failures + item.null_skips),
                          str(item.differs_from_folder) if item.differs_from_folder else "-", models)  # fmt: skip
    console.print(readable(files))
    targets = Table("target (machine:GPU)", "arch", "speedups", "failed", "alone", "kept",
                    title="Per hardware target")  # fmt: skip
    for hw in summary.hardware:
        for target in hw.targets:
            targets.add_row(target.target, target.arch, str(target.speedups), str(target.failures),
                            str(target.alone), str(target.kept))  # fmt: skip
    console.print(readable(targets))
    skipped = [s for hw in summary.hardware for s in hw.skipped] + summary.skipped
    if skipped:
        reasons = Table("file", "key", "reason", title="Skipped")
        for skip in skipped:
            reasons.add_row(skip.path, skip.key or "-", skip.reason)
        console.print(readable(reasons))
    console.print(f"[bold]{data['speedups']}[/] eager/compiled pairs, {data['failures']} failed, "
                  f"{data['measurements_alone']} lone measurements; [bold]{summary.created}[/] written now, "
                  f"{data['replayed']} attempts already stored, {len(skipped)} item(s) skipped")  # fmt: skip


def _fmt(value: float | None, digits: int = 3) -> str:
    return "-" if value is None or not math.isfinite(value) else f"{value:.{digits}f}"


def transfer(
    source: Annotated[
        str | None, typer.Option("--from", help="Source hardware target (where the effect was seen).")
    ] = None,
    destination: Annotated[
        str | None, typer.Option("--to", help="Destination target (where it should predict).")
    ] = None,
    pattern: Annotated[
        str | None, typer.Option("--pattern", "-p", help="Only kernels of this access pattern (--from/--to).")
    ] = None,
    matrix: Annotated[
        bool, typer.Option("--matrix", help="Every ordered pair of targets: rank correlation, pairs, 95% CI.")
    ] = False,
    predict_target: Annotated[
        str | None,
        typer.Option("--predict", help="Predict each effect on this target from the other targets only."),
    ] = None,
    transform: Annotated[
        str | None, typer.Option("--transform", "-t", help="Only this transform (--matrix, --predict).")
    ] = None,
    plot: Annotated[
        Path | None, typer.Option("--plot", help="With --matrix: write a heat map (PNG) to this file.")
    ] = None,
    resamples: Annotated[
        int,
        typer.Option("--resamples", min=0, max=10_000, help="Bootstrap resamples for the CIs (--matrix)."),
    ] = 1_000,
    namespace: NamespaceOption = None,
    as_json: JsonOption = False,
) -> None:
    """Does a transform's effect on one target predict its effect on another?

    --from A --to B: pairs attempts of the same transform on the same parent kernel on both targets;
    per transform, the Spearman rank correlation and sign agreement of the log speedups.
    --matrix: the same question for every ordered pair of targets at once (architecture order), with
    the number of pairs and a bootstrap 95% CI; --plot FILE draws it as a heat map.
    --predict T: predicts each transform's speedup on each kernel for T from the other targets,
    weighting each by its measured transfer to targets like T; T's own measurements are only shown.
    """
    if matrix:
        _transfer_matrix(namespace, transform, resamples, plot, as_json)
    elif predict_target is not None:
        _transfer_predict(namespace, predict_target, transform, as_json)
    elif source is not None and destination is not None:
        _transfer_pair(namespace, source, destination, pattern, as_json)
    else:
        raise fail("give --from and --to, or --matrix, or --predict TARGET")


def _transfer_pair(
    namespace: str | None, source: str, destination: str, pattern: str | None, as_json: bool
) -> None:
    with open_client(namespace) as client, cli_errors():
        response = client.transfer(source, destination, pattern)
    if as_json:
        print(response.model_dump_json(indent=2))
        return
    title = f"Transfer {source} -> {destination}" + (f" (pattern {pattern})" if pattern else "")
    table = Table("transform", "pairs", "rank corr", "agreement", f"mean ln speedup {source}",
                  f"mean ln speedup {destination}", title=title)  # fmt: skip
    table.columns[0].no_wrap = True  # transform names are the point of the table
    for row in response.transforms:
        table.add_row(row.transform, str(row.pairs), _fmt(row.rank_correlation), _fmt(row.agreement_rate),
                      _fmt(row.mean_log_speedup_source), _fmt(row.mean_log_speedup_destination))  # fmt: skip
    console.print(readable(table))
    pairs = sum(row.pairs for row in response.transforms)
    console.print(
        f"overall rank correlation: [bold]{_fmt(response.overall_rank_correlation)}[/] over {pairs} pair(s)"
    )
    if not response.transforms:
        console.print("[yellow]no transform was tried on the same kernel on both targets[/]")


def _transfer_matrix(
    namespace: str | None, transform: str | None, resamples: int, plot: Path | None, as_json: bool
) -> None:
    with open_client(namespace) as client, cli_errors():
        if as_json:
            response = client.transfer_matrix(transform, resamples)
        else:
            with err.status("Computing the transfer matrix (bootstrap CIs)..."):
                response = client.transfer_matrix(transform, resamples)
    if plot is not None:
        from kernelgraph.bench.transfer import plot_transfer_matrix

        what = transform or "all torch.compile configurations pooled"
        plot_transfer_matrix([t.name for t in response.targets], [t.family for t in response.targets],
                             response.cells, plot, f"Transfer of log speedups between targets ({what})")  # fmt: skip
        err.print(f"heat map written to {plot}")
    if as_json:
        print(response.model_dump_json(indent=2))
        return
    if not response.targets:
        console.print("[yellow]no measured transform effects in this namespace[/]")
        return
    names = [t.name for t in response.targets]
    short = {name: name.split(":", 1)[-1] for name in names}
    if len(set(short.values())) < len(names):  # one GPU model on two machines: keep the machine
        short = {name: name for name in names}
    # Destinations by number (the row of the same number names it): ten GPUs fit in 80 columns, and no
    # name is ever cut to a prefix that several targets share.
    number = {name: str(i) for i, name in enumerate(names, 1)}
    table = Table("source \\ destination", *[number[n] for n in names],
                  title=f"Rank correlation of log speedups ({transform or 'all transforms'}); targets oldest "
                  "architecture first")  # fmt: skip
    for column in table.columns[1:]:
        column.justify = "right"
    cells = {(c.source, c.destination): c for c in response.cells}
    for source in response.targets:
        row = []
        for name in names:
            cell = cells.get((source.name, name))
            row.append(
                "1" if name == source.name else "-" if cell is None else f"{_fmt(cell.rank_correlation, 2)}"
            )
        table.add_row(f"{number[source.name]} {short[source.name]} ({source.family})", *row)
    console.print(readable(table))
    ranked = sorted((c for c in response.cells if c.rank_correlation is not None and c.source < c.destination),
                    key=lambda c: c.rank_correlation or 0.0)  # fmt: skip
    if ranked:
        for label, cell in (("weakest", ranked[0]), ("strongest", ranked[-1])):
            console.print(f"{label} transfer: {cell.source} <-> {cell.destination}: "
                          f"{_fmt(cell.rank_correlation)} [{_fmt(cell.ci_low)}, {_fmt(cell.ci_high)}] over "
                          f"{cell.pairs} pairs")  # fmt: skip


def _transfer_predict(namespace: str | None, target: str, transform: str | None, as_json: bool) -> None:
    with open_client(namespace) as client, cli_errors():
        response = client.predict_transfer(target, transform)
    if as_json:
        print(response.model_dump_json(indent=2))
        return
    weights = Table("source target", "similarity", "est. rank corr", "weight", title=f"Sources for {target}")
    for w in response.weights:
        weights.add_row(w.target, _fmt(w.similarity), _fmt(w.estimated_rank_correlation), _fmt(w.weight, 2))
    console.print(readable(weights))
    table = Table("transform", "task", "predicted speedup", "sources", "measured speedup",
                  title=f"Predicted for {target} (best first; top 15 and bottom 5)")  # fmt: skip
    shown = (
        response.predictions[:15] + response.predictions[-5:]
        if len(response.predictions) > 20
        else response.predictions
    )
    for p in shown:
        table.add_row(
            p.transform, p.task, _fmt(p.predicted_speedup), str(p.sources), _fmt(p.measured_speedup)
        )
    console.print(readable(table))
    if response.rank_correlation_with_measured is not None:
        console.print(f"against what {target} measured (held out of the prediction): rank correlation "
                      f"[bold]{_fmt(response.rank_correlation_with_measured)}[/], helps/hurts right "
                      f"{_fmt((response.helps_hurts_accuracy or 0) * 100, 1)}% of the time")  # fmt: skip


def register(app: typer.Typer) -> None:
    app.add_typer(import_app, name="import")
    app.command("transfer")(transfer)
