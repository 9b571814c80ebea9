"""Retrieval within the query's vocabulary (issue #31, part 3): with `transforms`, evidence for any other
transform takes no neighbour slot and no transform slot, in every mode and on the exact and indexed
paths alike, and the index over-fetch still fills k."""

from __future__ import annotations

import re
import time
from typing import Any

import pytest

from kernelgraph.core.errors import InvalidInput
from kernelgraph.core.models import MAX_QUERY_TRANSFORMS, RetrieveResponse
from kernelgraph.service.embeddings import MiniLMEmbedder
from kernelgraph.service.knowledge import KnowledgeService
from kernelgraph.service.queries import CYPHER_DIR
from kernelgraph.service.store import GraphStore
from tests import factories

pytestmark = pytest.mark.neo4j

QUERY_SOURCE = (
    "void kernel(const float* x, float* y, int n) { for (int i = 0; i < n; i++) y[i] = expf(x[i]); }"
)
VOCABULARY = ["tile", "unroll", "vectorize"]  # what the query's task can apply
FOREIGN = "fuse"  # what the nearest states' evidence is for: not in the query's vocabulary
NEAR, FAR = 4, 4  # states of each kind; k = 3 < NEAR, so without the field the near ones fill every slot
K = 3
# Signatures away from the 0.5 most other tests' states sit at, so that on the shared indexes the far
# states still rank before theirs.
QUERY_VALUE, NEAR_VALUE, FAR_VALUE = 0.05, 0.07, 0.2
NEIGHBOUR_QUERIES = (
    "nearest_states_by_signature_exact", "nearest_states_by_signature", "nearest_states_by_source_exact",
    "nearest_states_by_source", "states_by_task",
)  # fmt: skip


@pytest.fixture(scope="module")
def embedder() -> MiniLMEmbedder:
    return MiniLMEmbedder()


def _seed(knowledge: KnowledgeService, namespace: str) -> tuple[set[str], set[str]]:
    """NEAR states (signature and source next to the query's) whose only evidence is FOREIGN, which wins
    big; FAR states (another kernel, a farther signature) with evidence for the vocabulary. Returns the
    ids of the near and the far states."""
    knowledge.upsert_targets(namespace, [factories.target()])
    near: set[str] = set()
    far: set[str] = set()
    for i in range(NEAR + FAR):
        close = i < NEAR
        source = (
            QUERY_SOURCE.replace("expf(x[i])", f"expf(x[i]) /* v{i} */")
            if close
            else f"void kernel(const float* a, float* c, int n) {{ /* blocked matmul {i} */ c[0] = a[{i}]; }}"
        )
        transforms = [(FOREIGN, 3.0)] if close else [(VOCABULARY[i % 3], 1.3), (FOREIGN, 2.0)][: 1 + i % 2]
        records = [
            factories.attempt(
                f"voc{i}:{j}", task="near" if close else "far", transform=name, speedup=speedup,
                parent_source=source, child_source=f"{source} /* {name} {j} */",
                parent_signature=factories.masked(NEAR_VALUE if close else FAR_VALUE + 0.01 * i),
            )
            for j, (name, speedup) in enumerate(transforms)
        ]  # fmt: skip
        (near if close else far).update(
            r.parent_measurement_id for r in knowledge.record_attempts(namespace, records)
        )
    return near, far


def _request(mode: str, **extra: Any) -> dict[str, Any]:
    request: dict[str, Any] = {"target": "cpu-test", "mode": mode, "k": K, "limit": 10, **extra}
    if mode in ("counters", "hybrid"):
        request["signature"] = factories.masked(QUERY_VALUE)
    if mode in ("text", "hybrid"):
        request["source"] = QUERY_SOURCE
    if mode == "label":
        request["tasks"] = ["near", "far"]
    return request


def _slots_filled(found: RetrieveResponse, mode: str, k: int = K) -> bool:
    """k neighbours; hybrid: k by signature and k by text, a state found both ways counted once."""
    return k <= found.neighbours <= 2 * k if mode == "hybrid" else found.neighbours == k


def _assert_within_vocabulary(found: RetrieveResponse, far: set[str], mode: str, k: int = K) -> None:
    assert _slots_filled(found, mode, k) and set(found.neighbour_ids) <= far, found.neighbour_ids
    assert found.transforms and {t.transform for t in found.transforms} <= set(VOCABULARY)
    assert all(set(t.evidence_measurement_ids) <= far for t in found.transforms)


@pytest.mark.parametrize("mode", ["counters", "text", "hybrid"])
def test_evidence_outside_the_vocabulary_takes_no_slot(
    store: GraphStore, namespace: str, embedder: MiniLMEmbedder, mode: str
) -> None:
    knowledge = KnowledgeService(store, embedder)
    near, far = _seed(knowledge, namespace)

    # Without the field the nearest states fill every slot, and their inapplicable transform ranks first.
    everything = knowledge.retrieve([namespace], _request(mode))
    assert _slots_filled(everything, mode) and set(everything.neighbour_ids) <= near
    assert [t.transform for t in everything.transforms] == [FOREIGN]

    # With it, all k slots go to states with applicable evidence, and every transform returned applies.
    within = knowledge.retrieve([namespace], _request(mode, transforms=VOCABULARY))
    _assert_within_vocabulary(within, far, mode)
    # Filtered before the limit: limit=1 still returns an applicable transform, not nothing.
    one = knowledge.retrieve([namespace], _request(mode, transforms=VOCABULARY, limit=1))
    assert [t.transform for t in one.transforms] == [within.transforms[0].transform]


@pytest.mark.parametrize("mode", ["counters", "text"])
def test_the_indexed_path_overfetches_past_the_filtered_states_to_fill_k(
    store: GraphStore, namespace: str, embedder: MiniLMEmbedder, mode: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Large namespaces go through the vector indexes, whose `fetch_k` comes before the query's filters:
    the near states the vocabulary drops (and every other namespace's) must not leave slots empty."""
    knowledge = KnowledgeService(store, embedder)
    _, far = _seed(knowledge, namespace)
    request = _request(mode, transforms=VOCABULARY)
    exact = knowledge.retrieve([namespace], request)
    _assert_within_vocabulary(exact, far, mode)
    monkeypatch.setattr("kernelgraph.service.retrieval.EXACT_SEARCH_MAX_STATES", 0)
    monkeypatch.setattr("kernelgraph.service.retrieval.OVERFETCH", 1)  # k candidates: the near ones first
    large = KnowledgeService(store, embedder)
    deadline = time.monotonic() + 30  # vector indexes take new nodes in shortly after their commit
    while True:
        indexed = large.retrieve([namespace], request)
        if set(indexed.neighbour_ids) == set(exact.neighbour_ids) or time.monotonic() > deadline:
            break
        time.sleep(0.5)
    _assert_within_vocabulary(indexed, far, mode)
    assert set(indexed.neighbour_ids) == set(exact.neighbour_ids)
    query = "nearest_states_by_signature" if mode == "counters" else "nearest_states_by_source"
    fetched = max(n for key, n in large.retrieval._overfetch.items() if key[0] == query)
    assert fetched > 1  # it had to fetch more than k


@pytest.mark.parametrize("mode", ["label", "global"])
def test_label_and_global_modes_follow_the_same_rule(store: GraphStore, namespace: str, mode: str) -> None:
    knowledge = KnowledgeService(store)
    near, far = _seed(knowledge, namespace)
    everything = knowledge.retrieve([namespace], _request(mode))
    assert set(everything.neighbour_ids) == near | far and everything.transforms[0].transform == FOREIGN
    within = knowledge.retrieve([namespace], _request(mode, transforms=VOCABULARY))
    _assert_within_vocabulary(within, far, mode, k=len(far))


def test_one_predicate_for_every_neighbour_query() -> None:
    """The rule is written once per neighbour query, word for word the same (Cypher has no includes)."""
    rule = re.compile(r"AND \(\$transforms IS NULL OR EXISTS \{.*?\}\)", re.S)
    found = {name: rule.findall((CYPHER_DIR / f"{name}.cypher").read_text()) for name in NEIGHBOUR_QUERIES}
    assert all(len(texts) == 1 for texts in found.values()), found
    assert len({" ".join(texts[0].split()) for texts in found.values()}) == 1


@pytest.mark.parametrize(
    ("transforms", "problem"),
    [
        ([], "at least 1"),
        ([f"t{i}" for i in range(MAX_QUERY_TRANSFORMS + 1)], f"at most {MAX_QUERY_TRANSFORMS}"),
        (["unroll", "x) MATCH (n"], "pattern"),
        ("unroll", "valid list"),
        ([4], "valid string"),
    ],
)
def test_a_bad_vocabulary_is_a_named_error(
    store: GraphStore, namespace: str, transforms: Any, problem: str
) -> None:
    knowledge = KnowledgeService(store)
    with pytest.raises(InvalidInput) as error:
        knowledge.retrieve([namespace], _request("counters", transforms=transforms))
    assert error.value.field is not None and error.value.field.split(".")[0] == "transforms"
    assert problem in str(error.value) and str(error.value).startswith("transforms")
