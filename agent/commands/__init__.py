"""CLI command implementations, one module per area; agent/cli.py wires them onto the `kernelgraph` app."""

from __future__ import annotations

import typer


def register_all(app: typer.Typer) -> None:
    """Attach every command group; each area's module owns its commands (add one line per module)."""
    from agent.commands import bench, graph, kernels, triton_cmd

    graph.register(app)

    triton_cmd.register(app)
    bench.register(app)
    kernels.register(app)
    from agent.commands import browser_cmd

    browser_cmd.register(app)
    from agent.commands import import_cmd

    import_cmd.register(app)
    __import__("agent.commands.agent_cmd", fromlist=["register"]).register(app)
    __import__("agent.commands.service_cmd", fromlist=["register"]).register(app)
