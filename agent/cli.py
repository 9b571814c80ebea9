"""The `kernelgraph` command: the one place that picks concrete classes and wires them together."""

from __future__ import annotations

import typer

app = typer.Typer(
    name="kernelgraph",
    help="KernelGraph: an experience graph on Neo4j for kernel-optimizing agents.",
    no_args_is_help=True,
    pretty_exceptions_show_locals=False,
)


def _register() -> None:
    # Imported here so `import kernelgraph.agent.cli` stays cheap; each module adds its commands to `app`.
    from kernelgraph.agent.commands import register_all

    register_all(app)


_register()


# Which extra brings each third-party module a command may need (pyproject.toml's optional dependencies).
EXTRA_OF_MODULE = {
    "neo4j": "service", "fastapi": "service", "uvicorn": "service", "mcp": "service",
    "sentence_transformers": "service", "numpy": "agent", "matplotlib": "agent",
    "triton": "triton", "torch": "triton", "anthropic": "llm",
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
