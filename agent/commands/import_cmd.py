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

from kernelgraph.agent.commands.graph import cli_errors, fail

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
    from kernelgraph.client import settings as settings_module
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
        Path, typer.Argument(help="KernelBench timing root (one folder per hardware) or one hardware folder.")
    ],
    namespace: NamespaceOption = None,
    as_json: JsonOption = False,
) -> None:
    """Import KernelBench's published baseline timings: eager PyTorch -> each torch.compile configuration.

    One target per hardware folder, one kernel per problem (and compiled variant), one transform per
    configuration, one attempt per hardware, problem and configuration. Malformed files are reported
    and skipped whole; re-importing writes nothing (attempt keys are deterministic).
    """
    from kernelgraph.agent.importers.kernelbench import import_timings

    if not directory.is_dir():
        raise fail(f"{directory}: not a directory")
    with open_client(namespace) as client, cli_errors():
        if as_json:
            summary = import_timings(directory, client)
        else:
            with console.status("Importing KernelBench timings...") as status:
                summary = import_timings(directory, client, progress=lambda text: status.update(text))
    data = summary.as_dict()
    if as_json:
        print(json.dumps(data, indent=2))
        return
    table = Table("hardware", "arch", "problems", "configs", "attempts", "created", "replayed", "kept", "skipped",
                  title=f"KernelBench timings from {directory}")  # fmt: skip
    for hw in summary.hardware:
        table.add_row(hw.target, hw.arch, str(hw.problems), str(len(hw.configs)), str(hw.attempts),
                      str(hw.created), str(hw.replayed), str(hw.kept), str(len(hw.skipped)))  # fmt: skip
    console.print(table)
    skipped = [s for hw in summary.hardware for s in hw.skipped] + summary.skipped
    if skipped:
        reasons = Table("file", "key", "reason", title="Skipped")
        for item in skipped:
            reasons.add_row(item.path, item.key or "-", item.reason)
        console.print(reasons)
    console.print(f"[bold]{summary.created}[/] attempts created, {data['replayed']} already stored, "
                  f"{len(skipped)} item(s) skipped")  # fmt: skip


def _fmt(value: float | None, digits: int = 3) -> str:
    return "-" if value is None or not math.isfinite(value) else f"{value:.{digits}f}"


def transfer(
    source: Annotated[
        str, typer.Option("--from", help="Source hardware target (where the effect was seen).")
    ],
    destination: Annotated[str, typer.Option("--to", help="Destination target (where it should predict).")],
    pattern: Annotated[
        str | None, typer.Option("--pattern", "-p", help="Only kernels of this access pattern.")
    ] = None,
    namespace: NamespaceOption = None,
    as_json: JsonOption = False,
) -> None:
    """Does a transform's effect on target A predict its effect on target B?

    Pairs attempts of the same transform (same parameters) on the same parent kernel on both targets;
    per transform: pairs, Spearman rank correlation and sign agreement of the log speedups, and the
    mean log speedup on each side; plus the correlation over all pairs.
    """
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
    console.print(table)
    pairs = sum(row.pairs for row in response.transforms)
    console.print(
        f"overall rank correlation: [bold]{_fmt(response.overall_rank_correlation)}[/] over {pairs} pair(s)"
    )
    if not response.transforms:
        console.print("[yellow]no transform was tried on the same kernel on both targets[/]")


def register(app: typer.Typer) -> None:
    app.add_typer(import_app, name="import")
    app.command("transfer")(transfer)
