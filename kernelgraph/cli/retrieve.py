"""`kernelgraph retrieve`: what worked from measured states like yours, from the terminal, with an
Nsight Compute export as the state if you have one, and the answer's explanation when it found little."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.table import Table

from kernelgraph.cli.graph import fail, parse_param
from kernelgraph.cli.import_cmd import JsonOption, NamespaceOption, open_client
from kernelgraph.cli.tables import readable

console = Console()


def _counters(counter: list[str], ncu_csv: Path | None, ncu_json: Path | None) -> dict[str, float]:
    from kernelgraph.core.ncu import NcuFormatError, parse_ncu_csv, parse_ncu_json

    counters: dict[str, float] = {}
    for path, parse, option in (
        (ncu_csv, parse_ncu_csv, "--ncu-csv"),
        (ncu_json, parse_ncu_json, "--ncu-json"),
    ):
        if path is None:
            continue
        if not path.is_file():
            raise fail(f"{option} {path}: no such file", 2)
        try:
            counters.update(parse(path.read_text()))
        except NcuFormatError as exc:
            raise fail(f"{option} {path}: {exc}", 2) from None
    for text in counter:
        name, value = parse_param(text)
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise fail(f"--counter {text!r}: the value must be a number", 2)
        counters[name] = float(value)
    return counters


def retrieve_cmd(
    target: Annotated[str, typer.Option("--target", help="The registered target the kernel runs on.")],
    counter_source: Annotated[
        str,
        typer.Option(
            "--counter-source", help="Where the counters came from, e.g. nvidia_ncu, cpu_cachegrind."
        ),
    ] = "nvidia_ncu",
    counter: Annotated[
        list[str] | None,
        typer.Option("--counter", "-c", help="NAME=VALUE (repeatable; raw ncu metric names too)."),
    ] = None,
    ncu_csv: Annotated[
        Path | None, typer.Option("--ncu-csv", help="An `ncu --csv` export (details or raw page).")
    ] = None,
    ncu_json: Annotated[
        Path | None, typer.Option("--ncu-json", help="Nsight Compute metrics as JSON.")
    ] = None,
    k: Annotated[int, typer.Option("--k", min=1, max=200, help="Similar states to draw from.")] = 20,
    limit: Annotated[int, typer.Option("--limit", min=1, max=100, help="Transforms to show at most.")] = 10,
    exclude_task: Annotated[
        str | None, typer.Option("--exclude-task", help="Ignore this task's experience.")
    ] = None,
    transform: Annotated[
        list[str] | None,
        typer.Option(
            "--transform",
            "-t",
            help="A transform your task can apply (repeatable): evidence "
            "for any other takes no slot (`kernelgraph tasks show TASK` lists them).",
        ),
    ] = None,
    namespace: NamespaceOption = None,
    as_json: JsonOption = False,
) -> None:
    """Transforms that worked from measured states like the one your counters describe (POST
    /v1/retrieve); when it finds fewer than k states, why (which dimensions your counters lacked and
    which counters fill them, what the namespace and target hold, what was left out)."""
    counters = _counters(counter or [], ncu_csv, ncu_json)
    if not counters:
        raise fail("give the state's counters: --counter NAME=VALUE, --ncu-csv FILE or --ncu-json FILE", 2)
    request: dict[str, Any] = {"target": target, "counter_source": counter_source, "counters": counters,
                               "k": k, "limit": limit, "exclude_task": exclude_task,
                               "transforms": transform or None}  # fmt: skip
    with open_client(namespace) as client:
        response = client.retrieve({key: value for key, value in request.items() if value is not None})
    if as_json:
        print(response.model_dump_json(indent=2))
        return
    table = Table("transform", "score", "attempts", "kept", "best speedup", "best setting",
                  title=f"What worked from {response.neighbours} similar states on {target}")  # fmt: skip
    for t in response.transforms:
        best = t.best_example or {}
        table.add_row(t.transform, f"{t.score:+.3f}", str(t.attempts), str(t.successes),
                      f"{t.best_speedup:.2f}x" if t.best_speedup else "-", json.dumps(best.get("params", ""))
                      if best.get("params") else "")  # fmt: skip
    if response.transforms:
        console.print(readable(table))
    else:
        console.print("no transforms: no similar measured state holds experience yet", highlight=False)
    if response.explanation is not None:
        console.print(f"why: {response.explanation.summary}", highlight=False, markup=False, soft_wrap=True)


def register(app: typer.Typer) -> None:
    app.command("retrieve")(retrieve_cmd)
