"""`kernelgraph compile TASK --backend triton --target cuda-sm90`: AOT compile and static metrics."""

from __future__ import annotations

import json
from typing import Any

import typer


def _parse_config(pairs: list[str], baseline: dict[str, Any]) -> dict[str, Any]:
    """--config KEY=VALUE pairs checked against the task's knobs: a known key, a value of its type."""
    config: dict[str, Any] = {}
    for pair in pairs:
        key, sep, raw = pair.partition("=")
        if not sep:
            raise typer.BadParameter(f"expected KEY=VALUE, got {pair!r}", param_hint="--config")
        if key not in baseline:
            known = ", ".join(sorted(baseline)) or "none"
            raise typer.BadParameter(
                f"unknown knob {key!r}; this task's knobs: {known}", param_hint="--config"
            )
        try:
            value = json.loads(raw.lower() if raw.lower() in ("true", "false") else raw)
        except json.JSONDecodeError:
            value = raw
        expected = type(baseline[key])
        if expected is float and isinstance(value, int) and not isinstance(value, bool):
            value = float(value)
        if not isinstance(value, expected) or (expected is int and isinstance(value, bool)):
            raise typer.BadParameter(
                f"{key}={raw!r}: expected {expected.__name__} (baseline {key}={baseline[key]!r})",
                param_hint="--config",
            )
        config[key] = value
    return config


def compile_cmd(
    task: str = typer.Argument(..., help="task name, e.g. softmax"),
    backend: str = typer.Option("triton", "--backend", help="only 'triton' compiles for CUDA targets"),
    target: str = typer.Option("cuda-sm90", "--target", help="cuda-sm80 | cuda-sm90 | cuda-sm100"),
    config: list[str] = typer.Option([], "--config", help="override a knob: KEY=VALUE (repeatable)"),
    as_json: bool = typer.Option(False, "--json", help="print one JSON object"),
) -> None:
    """Compile a task's kernel variant ahead of time and print its static metrics."""
    from kernelgraph.agent.backends.triton import TritonBackend
    from kernelgraph.agent.targets import get_target
    from kernelgraph.agent.tasks import UnknownTaskError, get_task

    if backend != "triton":
        raise typer.BadParameter(
            "this command compiles Triton kernels; use --backend triton", param_hint="--backend"
        )
    try:
        the_task = get_task(task, backend)
    except UnknownTaskError as exc:  # also a task defined but not rendered for Triton
        raise typer.BadParameter(str(exc), param_hint="TASK") from None
    cfg = {**the_task.baseline_config, **_parse_config(config, dict(the_task.baseline_config))}
    result = TritonBackend().compile(
        the_task, the_task.source(backend, cfg), get_target(target, measure=False)
    )
    if as_json:
        payload = {
            "task": task,
            "target": target,
            "config": cfg,
            "ok": result.ok,
            "static_metrics": result.static_metrics,
            "diagnostics": [str(d) for d in result.diagnostics],
            "artifact": result.artifact,
        }
        typer.echo(json.dumps(payload, sort_keys=True))
    else:
        from rich.console import Console
        from rich.table import Table

        from kernelgraph.cli.tables import readable

        table = Table(title=f"{task} on {target} ({'ok' if result.ok else 'failed'})")
        table.add_column("metric")
        table.add_column("value", justify="right")
        for key, value in sorted(result.static_metrics.items()):
            table.add_row(key, f"{value:g}")
        console = Console()
        console.print(readable(table))
        if not result.ok:
            console.print(result.diagnosis)
    raise typer.Exit(0 if result.ok else 1)


def register(app: typer.Typer) -> None:
    app.command("compile")(compile_cmd)
