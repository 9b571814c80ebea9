"""Deleting a namespace: everything a team recorded, with a dry run that counts what would go.

Every node carries its namespace (docs/graph-model.md), so a namespace is exactly the nodes whose
`namespace` is its name: targets, kernels, measurements, attempts, transforms, access patterns,
whatever per-namespace aggregates exist, and its API keys. Deleting runs in batches in auto-commit
transactions (`cypher/namespace_delete.cypher`); an interrupted delete is finished by running it again.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from kernelgraph.core.errors import Retryable
from kernelgraph.service.auth import check_namespace
from kernelgraph.service.store import GraphStore, mapped_errors

DELETE_BATCH = 5_000


@dataclass(frozen=True)
class NamespaceContents:
    """What a namespace holds (or held, before a delete): nodes per label and their relationships."""

    namespace: str
    nodes: dict[str, int] = field(default_factory=dict)
    relationships: int = 0

    @property
    def total_nodes(self) -> int:
        return sum(self.nodes.values())

    @property
    def api_keys(self) -> int:
        return self.nodes.get("ApiKey", 0)


def contents(store: GraphStore, namespace: str) -> NamespaceContents:
    """Count what `namespace` holds, by label (reads only)."""
    check_namespace(namespace)
    rows = store.read("namespace_contents", namespace=namespace)
    return NamespaceContents(
        namespace=namespace,
        nodes={str(r["label"]): int(r["nodes"]) for r in rows},
        relationships=sum(int(r["relationships"]) for r in rows),
    )


def delete(store: GraphStore, namespace: str, batch_size: int = DELETE_BATCH) -> NamespaceContents:
    """Delete everything in `namespace`; returns what it held just before. Safe to run again."""
    before = contents(store, namespace)
    if before.total_nodes == 0:
        return before
    query = store.queries["namespace_delete"]
    params = {"namespace": namespace, "batch_size": batch_size}
    query.check(params)
    with mapped_errors(), store.driver.session(database=store.database) as session:
        session.run(query.cypher, params).consume()
    left = contents(store, namespace).total_nodes
    if left:  # a concurrent writer added nodes while the delete ran
        raise Retryable(
            f"namespace {namespace!r} still holds {left} nodes written during the delete; delete it again",
            field="namespace",
        )
    return before
