"""The `kernelgraph` command: the composition root, the one place that puts the service's and the
agent's commands (and the commands that need both, kernelgraph/commands.py) on one app."""

from __future__ import annotations

import typer

app = typer.Typer(
    name="kernelgraph",
    help="KernelGraph: an experience graph on Neo4j for kernel-optimizing agents.",
    no_args_is_help=True,
    pretty_exceptions_show_locals=False,
)


bench_app = typer.Typer(help="Benchmarks and end-to-end checks.", no_args_is_help=True)


def _register() -> None:
    # Each side adds its commands; command modules import their heavy dependencies only when run.
    from kernelgraph import commands
    from kernelgraph.agent.commands import register_all as register_agent
    from kernelgraph.service.commands import register_all as register_service

    register_service(app, bench_app)
    register_agent(app, bench_app)
    commands.register(app, bench_app)
    app.add_typer(bench_app, name="bench")


_register()


# Which extra brings each third-party module a command may need (pyproject.toml's optional dependencies).
EXTRA_OF_MODULE = {
    "neo4j": "service", "fastapi": "service", "uvicorn": "service", "mcp": "service",
    "sentence_transformers": "service", "numpy": "agent", "matplotlib": "agent",
    "triton": "triton", "torch": "triton", "anthropic": "llm", "optuna": "study", "scipy": "study",
}  # fmt: skip


def main() -> None:
    """The console script: `app`, with a missing optional dependency named by the extra that brings it."""
    try:
        app()
    except ModuleNotFoundError as exc:
        top = (exc.name or "").split(".")[0]
        if top not in EXTRA_OF_MODULE:
            raise
        typer.echo(
            f"error: this command needs the {top!r} package: pip install 'kernelgraph[{EXTRA_OF_MODULE[top]}]'",
            err=True,
        )
        raise SystemExit(1) from None
