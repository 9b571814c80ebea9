"""Lineage, evidence and leaderboards: reading back what was recorded."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from kernelgraph.core.errors import NotFound
from kernelgraph.core.models import LineageStep
from kernelgraph.service.store import GraphStore


def lineage(
    store: GraphStore, namespaces: Sequence[str], kernel_id: str, max_depth: int = 50
) -> list[LineageStep]:
    """The kernel and its ancestors, nearest first, each with the transform that produced the step."""
    rows = store.read("kernel_lineage", namespaces=list(namespaces), kernel_id=kernel_id, max_depth=max_depth)
    if not rows:
        raise NotFound(f"no kernel {kernel_id!r} in namespace(s) {', '.join(namespaces)}", field="kernel_id")
    by_key = {
        e["attempt_key"]: e
        for e in evidence(store, namespaces, [r["attempt_key"] for r in rows if r["attempt_key"]])
    }
    return [
        LineageStep(
            kernel_id=r["kernel_id"],
            task=r["task"],
            variant=r["variant"] or "",
            transform=r["transform"],
            outcome=by_key.get(r["attempt_key"], {}).get("outcome"),
            speedup=by_key.get(r["attempt_key"], {}).get("speedup"),
            depth=r["depth"],
        )
        for r in rows
    ]


def evidence(
    store: GraphStore, namespaces: Sequence[str], attempt_keys: Sequence[str]
) -> list[dict[str, Any]]:
    """The attempts behind a recommendation, in full."""
    rows = store.read("attempt_evidence", namespaces=list(namespaces), attempt_keys=list(attempt_keys))
    return [row["attempt"] for row in rows]


def leaderboard(
    store: GraphStore,
    namespaces: Sequence[str],
    pattern: str | None = None,
    target: str | None = None,
    limit: int = 100,
) -> list[dict[str, Any]]:
    """Transforms ranked per access pattern and target."""
    return store.read(
        "transform_leaderboard", namespaces=list(namespaces), pattern=pattern, target=target, limit=limit
    )


def list_transforms(store: GraphStore, namespaces: Sequence[str]) -> list[dict[str, Any]]:
    return store.read("list_transforms", namespaces=list(namespaces))
