"""scripts/ingest_ablation.py, the diagnostic behind docs/scaling.md's ingestion floor, still applies
its cuts to record_attempts.cypher, writes what each floor says it writes, and leaves nothing behind."""

from __future__ import annotations

import dataclasses
import importlib.util
import json
from pathlib import Path
from types import ModuleType

import pytest

from kernelgraph.client.settings import Settings
from kernelgraph.service.store import GraphStore

pytestmark = pytest.mark.neo4j

REPO = Path(__file__).resolve().parents[2]


def _script() -> ModuleType:
    spec = importlib.util.spec_from_file_location("ingest_ablation", REPO / "scripts" / "ingest_ablation.py")
    assert spec is not None and spec.loader is not None
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    return script


def _ablation_labels(store: GraphStore) -> dict[str, int]:
    rows = store.driver.execute_query(
        "MATCH (n) WHERE n.namespace STARTS WITH 'ablation-' RETURN labels(n)[0] AS label, count(*) AS n",
        database_=store.database,
    ).records
    return {r["label"]: r["n"] for r in rows}


def test_every_variant_is_a_real_cut_and_a_changed_query_is_reported() -> None:
    script = _script()
    texts = script.variants()
    assert texts["full"] == script.FULL.text
    assert len(set(texts.values())) == len(texts), "each variant leaves out something different"
    script.FULL = dataclasses.replace(script.FULL, text="RETURN 1")
    with pytest.raises(ValueError, match=r"record_attempts\.cypher changed"):
        script.variants()


def test_the_floors_write_only_what_they_name_and_every_namespace_is_deleted(
    monkeypatch: pytest.MonkeyPatch, neo4j_settings: Settings, store: GraphStore, tmp_path: Path
) -> None:
    script = _script()
    monkeypatch.setattr(script, "get_settings", lambda: neo4j_settings)
    written: dict[str, dict[str, int]] = {}
    delete = script.namespaces.delete

    def delete_after_counting(graph: GraphStore, namespace: str) -> object:
        rows = graph.driver.execute_query(
            "MATCH (n {namespace: $ns}) RETURN labels(n)[0] AS label, count(*) AS n", ns=namespace,
            database_=graph.database,
        ).records  # fmt: skip
        written[namespace] = {r["label"]: r["n"] for r in rows}
        return delete(graph, namespace)

    monkeypatch.setattr(script.namespaces, "delete", delete_after_counting)
    before = _ablation_labels(store)

    report = script.main(300, tmp_path)

    assert _ablation_labels(store) == before, "every throw-away namespace is deleted"
    assert json.loads((tmp_path / "ingest-ablation-latest.json").read_text())["runs"] == report["runs"]
    variants = script.variants()
    assert set(report["runs"]) == set(variants) and all(len(r) == 2 for r in report["runs"].values())
    assert set(report["cpu_ms_per_attempt"]) == set(report["attempts_per_transaction"]) == set(variants)
    assert all(r["service"] > 0 for runs in report["cpu_ms_per_attempt"].values() for r in runs)
    # Namespaces in the order they were made: the warm-up, the variants A..Z then Z..A, python only.
    order = ["full", *variants, *reversed(variants)]
    graphs = dict(zip(order, written.values(), strict=False))
    attempts = report["attempts"]
    assert graphs["full"]["Attempt"] == attempts
    alone = graphs["floor: the attempt node alone"]
    assert alone["Attempt"] == attempts and not {"Kernel", "Measurement", "StateEvidence"} & set(alone)
    floor = graphs["floor: plain CREATE of what each attempt adds"]
    assert floor["Attempt"] == floor["StateEvidence"] == floor["Kernel"] == attempts
    assert floor["Measurement"] < graphs["full"]["Measurement"], "no parent states in the floor"
