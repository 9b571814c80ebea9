"""The study's control modes: retrieval by task label, a global prior, and exact text search."""

from __future__ import annotations

import pytest

from kernelgraph.core.errors import InvalidInput
from kernelgraph.service.embeddings import MiniLMEmbedder
from kernelgraph.service.knowledge import KnowledgeService
from kernelgraph.service.store import GraphStore
from tests import factories

pytestmark = pytest.mark.neo4j

SOURCE = "void kernel(const float* x, float* y, int n) { for (int i = 0; i < n; i++) y[i] = x[i] * 2.0f; }"


def _seed(knowledge: KnowledgeService, namespace: str) -> None:
    """Two instances of one task (same source) where different transforms win, and another task."""
    knowledge.upsert_targets(namespace, [factories.target()])
    for task, transform, speedup in (
        ("scale:small", "unroll", 1.6),
        ("scale:large", "parallelize", 3.0),
        ("other:1", "tile", 2.0),
    ):
        knowledge.record_attempts(namespace, [factories.attempt(
            f"{task.replace(':', '-')}:0", task=task, transform=transform, speedup=speedup,
            parent_source=SOURCE if task.startswith("scale") else "void kernel(void) { /* other */ }",
            child_source=f"{SOURCE} /* {transform} */",
        )])  # fmt: skip


def test_label_mode_reads_only_the_named_tasks(store: GraphStore, namespace: str) -> None:
    knowledge = KnowledgeService(store)
    _seed(knowledge, namespace)
    found = knowledge.retrieve(
        [namespace], {"target": "cpu-test", "mode": "label", "tasks": ["scale:large"], "k": 5}
    )
    assert [t.transform for t in found.transforms] == ["parallelize"]
    assert found.neighbours == 1 and found.neighbour_scores == [1.0]
    # Excluded labels stay out even when named.
    none = knowledge.retrieve(
        [namespace],
        {"target": "cpu-test", "mode": "label", "tasks": ["scale:large"], "exclude_tasks": ["scale:large"]},
    )
    assert none.transforms == [] and none.neighbours == 0


def test_label_mode_without_tasks_is_a_named_error(store: GraphStore, namespace: str) -> None:
    knowledge = KnowledgeService(store)
    _seed(knowledge, namespace)
    with pytest.raises(InvalidInput) as error:
        knowledge.retrieve([namespace], {"target": "cpu-test", "mode": "label"})
    assert error.value.field == "tasks"


def test_global_mode_weighs_every_state_alike(store: GraphStore, namespace: str) -> None:
    knowledge = KnowledgeService(store)
    _seed(knowledge, namespace)
    found = knowledge.retrieve(
        [namespace], {"target": "cpu-test", "mode": "global", "exclude_tasks": ["other:1"]}
    )
    assert {t.transform for t in found.transforms} == {"unroll", "parallelize"}
    assert found.neighbours == 2 and set(found.neighbour_scores) == {1.0}


def test_exact_text_search_cannot_tell_instances_of_one_source_apart(
    store: GraphStore, namespace: str
) -> None:
    """The same source at two sizes: text retrieval scores both instances alike (what it cannot do)."""
    knowledge = KnowledgeService(store, MiniLMEmbedder())
    _seed(knowledge, namespace)
    found = knowledge.retrieve([namespace], {"target": "cpu-test", "mode": "text", "source": SOURCE, "k": 2})
    assert found.neighbours == 2
    assert found.neighbour_scores[0] == pytest.approx(found.neighbour_scores[1], abs=1e-6)
    assert {t.transform for t in found.transforms} == {"unroll", "parallelize"}
