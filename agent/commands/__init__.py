"""CLI command implementations, one module per area; agent/cli.py wires them onto the `kernelgraph` app."""

from __future__ import annotations

import typer


def register_all(app: typer.Typer) -> None:
    """Attach every command group; each area's module owns its commands (add one line per module)."""
