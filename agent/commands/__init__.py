"""CLI command implementations, one module per area; agent/cli.py wires them onto the `kernelgraph` app."""

from __future__ import annotations

import typer


def register_all(app: typer.Typer) -> None:
    """Attach every area's commands to the app (each module's `register` adds its own)."""
    from kernelgraph.agent.commands import (
        agent_cmd,
        bench,
        browser_cmd,
        graph,
        import_cmd,
        kernels,
        service_cmd,
        triton_cmd,
    )

    for module in (graph, kernels, triton_cmd, agent_cmd, bench, import_cmd, service_cmd, browser_cmd):
        module.register(app)
