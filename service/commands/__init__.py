"""The service's operational commands: the local Neo4j, the schema, Cypher, serving, API keys, MCP,
Browser, imports and transfer queries, consolidation, and the service's benchmarks; kernelgraph/cli.py puts them on
the `kernelgraph` app beside the agent's."""

from __future__ import annotations

import typer


def register_all(app: typer.Typer, bench_app: typer.Typer) -> None:
    """Attach every area's commands (each module's `register` adds its own)."""
    from kernelgraph.service.commands import (
        bench_cmd,
        browser_cmd,
        consolidate_cmd,
        graph,
        import_cmd,
        retrieve_cmd,
        service_cmd,
    )

    for module in (graph, import_cmd, service_cmd, browser_cmd, consolidate_cmd, retrieve_cmd):
        module.register(app)
    bench_cmd.register(bench_app)
