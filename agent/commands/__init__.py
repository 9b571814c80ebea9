"""The agent's commands (tasks, targets, compile, check, evaluate, optimize, its benchmarks), one module
per area; kernelgraph/cli.py puts them on the `kernelgraph` app beside the service's."""

from __future__ import annotations

import typer


def register_all(app: typer.Typer, bench_app: typer.Typer) -> None:
    """Attach every area's commands (each module's `register` adds its own)."""
    from kernelgraph.agent.commands import agent_cmd, bench, kernels, triton_cmd

    for module in (kernels, triton_cmd, agent_cmd):
        module.register(app)
    bench.register(bench_app)
