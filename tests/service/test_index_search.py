"""The indexed path finds a namespace's true nearest states although every namespace shares the vector
indexes: another namespace's states that crowd one per-source search's candidates must not hand the
slots to a farther source's states (service/retrieval.py `search_index`)."""

from __future__ import annotations

import time

import pytest

from kernelgraph.service.knowledge import KnowledgeService
from kernelgraph.service.store import GraphStore
from tests import factories

pytestmark = pytest.mark.neo4j

K = 3
# Away from the 0.5 most other tests' states sit at (and from the vocabulary tests' 0.05-0.2): the
# query, another namespace's states nearer to it than ours, ours on cachegrind, ours on the timing source.
QUERY, CROWD, NEAR, FAR = 0.93, 0.935, 0.92, 0.80
CROWDED = 2 * K  # the crowd fills the first fetch (k candidates) of the cachegrind index, and more


def _states(
    knowledge: KnowledgeService, namespace: str, value: float, source: str, count: int, name: str
) -> set[str]:
    records = [
        factories.attempt(
            f"{name}{i}:0", task=name, parent_source=f"void kernel(void) {{ /* {name} {i} */ }}",
            child_source=f"void kernel(void) {{ /* {name} {i}, unrolled */ }}",
            parent_measurement=factories.measurement(1e6, counter_source=source)
            | {"signature": factories.masked(value + 0.0001 * i, source)},
        )
        for i in range(count)
    ]  # fmt: skip
    return {str(r.parent_measurement_id) for r in knowledge.record_attempts(namespace, records)}


def test_a_search_crowded_by_another_namespace_still_returns_the_nearest_states(
    store: GraphStore, namespace: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    knowledge = KnowledgeService(store)
    crowd = f"{namespace}-crowd"
    for space in (namespace, crowd):
        knowledge.upsert_targets(space, [factories.target()])
    near = _states(knowledge, namespace, NEAR, "cpu_cachegrind", K, "near")
    far = _states(knowledge, namespace, FAR, "cpu_timing", K, "far")
    _states(knowledge, crowd, CROWD, "cpu_cachegrind", CROWDED, "crowd")
    request = {"target": "cpu-test", "mode": "counters", "k": K, "signature": factories.masked(QUERY)}
    exact = knowledge.retrieve([namespace], request)  # a small namespace: scored exactly
    assert set(exact.neighbour_ids) == near

    # Through the indexes, fetching k candidates per search first: the cachegrind search's are all the
    # crowd's, the timing search's are our far states, which fill k slots. They are not the nearest.
    monkeypatch.setattr("kernelgraph.service.retrieval.EXACT_SEARCH_MAX_STATES", 0)
    monkeypatch.setattr("kernelgraph.service.retrieval.OVERFETCH", 1)
    deadline = time.monotonic() + 30  # vector indexes take new nodes in shortly after their commit
    while True:
        indexed = KnowledgeService(store).retrieve([namespace], request)
        if set(indexed.neighbour_ids) == near or time.monotonic() > deadline:
            break
        time.sleep(0.5)
    assert set(indexed.neighbour_ids) == near, (indexed.neighbour_ids, far)
