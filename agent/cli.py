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
    # Imported here so `import agent.cli` stays cheap; each module adds its commands to `app`.
    from kernelgraph.agent.commands import register_all

    register_all(app)


_register()
