"""Where batch ingestion's time goes: the same attempts recorded with parts of record_attempts left out.

    python scripts/ingest_ablation.py [MEASUREMENTS] [--results-dir results]

A diagnostic, not a product path: every variant but `full` writes an incomplete graph (into its own
throw-away namespace on the configured Neo4j, deleted afterwards). Each variant records the same
`kernelgraph bench service` attempts as that benchmark does (batches of 1,000 from 2 threads);
variants run in the order A..Z then Z..A so that the database's growth favours none, and each rate
is the mean of its two runs. `python only` is the service's own work per attempt (validation and
row building, one thread, no write): the floor under any database work. Saves
results/ingest-ablation-<UTC time>.json.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from kernelgraph.client.reports import run_context, save_report
from kernelgraph.client.settings import get_settings
from kernelgraph.service import migrate, namespaces
from kernelgraph.service.bench.service_bench import TARGETS, BenchOptions, generate
from kernelgraph.service.knowledge import KnowledgeService
from kernelgraph.service.queries import QueryRegistry, registry
from kernelgraph.service.store import GraphStore, open_driver

FULL = registry()["record_attempts"]


def _cut(text: str, start: str, end: str) -> str:
    """`text` without the span from `start` through `end` (both must be there: the query changed?)."""
    i = text.index(start)
    j = text.index(end, i) + len(end)
    return text[:i] + text[j:]


def variants() -> dict[str, str]:
    """record_attempts' text with one part left out per variant (a ValueError when a part moved)."""
    text = FULL.text
    out = {
        "full": text,
        "no hub relationships (target, transform)": text.replace(
            "CREATE (a)-[:APPLIED]->(t), (a)-[:ON_TARGET]->(h)\n", ""
        )
        .replace("MERGE (pm)-[:OF]->(p)\n      MERGE (pm)-[:ON]->(h))", "MERGE (pm)-[:OF]->(p))")
        .replace("MERGE (cm)-[:OF]->(c)\n      MERGE (cm)-[:ON]->(h))", "MERGE (cm)-[:OF]->(c))"),
        "no access patterns": _cut(
            text, "  // Patterns of kernels first seen", "MERGE (kernel)-[:EXHIBITS]->(ap)\n  }\n"
        ),
        "no per-source vectors": text.replace(
            "SET pm['signature_' + pm.counter_source] = [i IN pm.signature_dims | pm.signature[i]])",
            "SET pm.x = 1)",
        ),
        "no per-state aggregates": _cut(
            text, "    // The per-state aggregate of", "agg.updated_at = datetime()\n"
        ),
    }
    unchanged = [name for name, variant in out.items() if name != "full" and variant == text]
    if unchanged:
        raise ValueError(f"record_attempts.cypher changed: these cuts no longer apply: {unchanged}")
    return out


def main(measurements: int, results_dir: Path) -> dict[str, Any]:
    settings = get_settings()
    driver = open_driver(settings)
    store = GraphStore(driver, settings.neo4j_database)
    migrate.apply(store)
    data = generate(BenchOptions(measurements=measurements))
    batches = [data.attempts[i : i + 1000] for i in range(0, len(data.attempts), 1000)]
    texts = variants()
    created: list[str] = []

    def rate(name: str) -> float:
        variant = GraphStore(driver, settings.neo4j_database)
        variant.queries = QueryRegistry(
            {**registry().queries, "record_attempts": dataclasses.replace(FULL, text=texts[name])}
        )
        knowledge = KnowledgeService(variant)
        namespace = f"ablation-{uuid.uuid4().hex[:8]}"
        created.append(namespace)
        knowledge.upsert_targets(namespace, list(TARGETS))
        started = time.perf_counter()
        with ThreadPoolExecutor(2) as pool:
            list(pool.map(lambda batch: knowledge.record_attempts(namespace, batch), batches))
        return len(data.attempts) / (time.perf_counter() - started)

    def python_only() -> float:
        knowledge = KnowledgeService(store)
        knowledge.writer.submit = lambda *args, **kwargs: {}  # type: ignore[method-assign]
        knowledge._resolve_parent_references = lambda *args: None  # type: ignore[method-assign]
        namespace = f"ablation-{uuid.uuid4().hex[:8]}"
        created.append(namespace)
        knowledge.upsert_targets(namespace, list(TARGETS))
        started = time.perf_counter()
        for batch in batches:
            knowledge.record_attempts(namespace, batch)
        return len(data.attempts) / (time.perf_counter() - started)

    result: dict[str, Any] = {
        "benchmark": "ingest-ablation", "started_at": datetime.now(UTC).isoformat(timespec="seconds"),
        **run_context(), "measurements": data.measurements, "attempts": len(data.attempts),
        "batch_size": 1000, "threads": 2, "runs": {},
    }  # fmt: skip
    try:
        for name in [*texts, *reversed(texts)]:
            result["runs"].setdefault(name, []).append(round(rate(name), 1))
            print(f"{name:42s} {result['runs'][name][-1]:8.0f} attempts/s", file=sys.stderr, flush=True)
        result["python_only_attempts_per_s"] = round(python_only(), 1)
    finally:
        for namespace in created:
            namespaces.delete(store, namespace)
        driver.close()
    mean = {name: sum(runs) / len(runs) for name, runs in result["runs"].items()}
    full_ms = 1000 / mean["full"]
    result["attempts_per_s"] = {name: round(r, 1) for name, r in mean.items()}
    result["ms_per_attempt_saved"] = {
        name: round(full_ms - 1000 / r, 3) for name, r in mean.items() if name != "full"
    }
    result["python_only_ms_per_attempt"] = round(1000 / result["python_only_attempts_per_s"], 3)
    save_report(result, results_dir, "ingest-ablation")
    return result


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("measurements", type=int, nargs="?", default=20_000)
    parser.add_argument("--results-dir", type=Path, default=Path("results"))
    options = parser.parse_args()
    print(json.dumps(main(options.measurements, options.results_dir), indent=1))
