"""Retrieval as it was before rollups (schema 0010), kept as the oracle the rollup tests compare with:
its aggregation query walked every duplicate merged into a state instead of reading the state's rollup."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from kernelgraph.service.queries import QueryRegistry, parse_query
from kernelgraph.service.store import GraphStore

WALKING_QUERY = Path(__file__).resolve().parent / "fixtures" / "cypher" / "aggregate_transforms_0009.cypher"


def walking_store(store: GraphStore) -> GraphStore:
    """The same database, answering `aggregate_transforms` with the walking query."""
    old = GraphStore(store.driver, store.database)
    walking = parse_query(WALKING_QUERY)
    # It takes (and ignores) the parameters of per-key evidence (schema 0015): the graphs it judges have
    # one recording key, on which the voices of aggregate_transforms.cypher change nothing.
    # It also answers the columns those added, as the one key of such a graph: the service's (verified).
    # Likewise measured target weights (schema 0017): its graphs' evidence is on one target, and the
    # query's vocabulary (`transforms`): its tests send none.
    trust = {"own_keys", "influence_bound", "verified_only", "target_weights", "transforms"}
    text = walking.text.replace(
        "       disputed\nORDER BY",
        "       disputed, attempts AS verified_attempts, ['service'] AS keys\nORDER BY",
    )
    assert text != walking.text, "the oracle's RETURN clause moved"
    query = dataclasses.replace(
        walking, name="aggregate_transforms", text=text, params=walking.params | trust
    )
    old.queries = QueryRegistry({**old.queries.queries, "aggregate_transforms": query})
    return old
