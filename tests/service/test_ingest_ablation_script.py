"""kernelgraph.bench.ingest_ablation, the diagnostic behind docs/scaling.md's ingestion floor, still applies
its cuts to record_attempts.cypher, writes what each floor says it writes, and leaves nothing behind."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable
from pathlib import Path
from types import ModuleType

import pytest

from kernelgraph.service.store import GraphStore
from tests import factories


def _ablation_labels(store: GraphStore) -> dict[str, int]:
    rows = store.driver.execute_query(
        "MATCH (n) WHERE n.namespace STARTS WITH 'ablation-' RETURN labels(n)[0] AS label, count(*) AS n",
        database_=store.database,
    ).records
    return {r["label"]: r["n"] for r in rows}


def test_every_variant_is_a_real_cut_and_a_changed_query_is_reported() -> None:
    script = factories.bench_module("ingest_ablation")
    texts = script.variants()
    assert texts["full"] == script.FULL.text
    assert len(set(texts.values())) == len(texts), "each variant leaves out something different"
    script.FULL = dataclasses.replace(script.FULL, text="RETURN 1")
    with pytest.raises(ValueError, match=r"record_attempts\.cypher changed"):
        script.variants()


@pytest.mark.neo4j
def test_the_floors_write_only_what_they_name_and_every_namespace_is_deleted(
    bench_module_on_test_neo4j: Callable[[str], ModuleType], monkeypatch: pytest.MonkeyPatch, store: GraphStore,
    tmp_path: Path,
) -> None:  # fmt: skip
    script = bench_module_on_test_neo4j("ingest_ablation")
    made: list[str] = []  # namespaces in the order the script made them
    written: dict[str, dict[str, int]] = {}  # namespace -> label -> nodes, just before its deletion
    upsert, delete = script.KnowledgeService.upsert_targets, script.namespaces.delete

    def note_namespace(knowledge: object, namespace: str, targets: object) -> object:
        made.append(namespace)
        return upsert(knowledge, namespace, targets)  # type: ignore[arg-type]

    def delete_after_counting(graph: GraphStore, namespace: str) -> object:
        rows = graph.driver.execute_query(
            "MATCH (n {namespace: $ns}) RETURN labels(n)[0] AS label, count(*) AS n", ns=namespace,
            database_=graph.database,
        ).records  # fmt: skip
        written[namespace] = {r["label"]: r["n"] for r in rows}
        return delete(graph, namespace)

    monkeypatch.setattr(script.KnowledgeService, "upsert_targets", note_namespace)
    monkeypatch.setattr(script.namespaces, "delete", delete_after_counting)
    before = _ablation_labels(store)

    report = script.main(300, tmp_path)

    assert _ablation_labels(store) == before, "every throw-away namespace is deleted"
    assert set(written) == set(made)
    assert json.loads((tmp_path / "ingest-ablation-latest.json").read_text())["runs"] == report["runs"]
    variants = script.variants()
    assert set(report["runs"]) == set(variants) and all(len(r) == 2 for r in report["runs"].values())
    assert set(report["cpu_ms_per_attempt"]) == set(report["attempts_per_transaction"]) == set(variants)
    assert all(r["service"] > 0 for runs in report["cpu_ms_per_attempt"].values() for r in runs)
    # The warm-up, the variants A..Z then Z..A, then python only: each run its own namespace.
    order = ["full", *variants, *reversed(variants), "python only"]
    assert len(made) == len(order)
    attempts = report["attempts"]
    for name, namespace in zip(order, made, strict=True):
        graph = written[namespace]
        if name == "python only":
            assert "Attempt" not in graph
        elif name == "floor: the attempt node alone":
            assert graph["Attempt"] == attempts and not {"Kernel", "Measurement", "StateEvidence"} & set(
                graph
            )
        elif name == "floor: plain CREATE of what each attempt adds":
            assert graph["Attempt"] == graph["StateEvidence"] == graph["Kernel"] == attempts
            assert graph["Measurement"] < written[made[0]]["Measurement"], "no parent states in the floor"
        else:
            assert graph["Attempt"] == attempts, name
