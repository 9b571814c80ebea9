"""Where batch ingestion's time goes: the same attempts recorded with parts of record_attempts left out.

    python -m kernelgraph.bench.ingest_ablation [MEASUREMENTS] [--batch-size 1000] [--results-dir results]

A diagnostic, not a product path: every variant but `full` writes an incomplete graph (into its own
throw-away namespace on the configured Neo4j, deleted afterwards). Each variant records the same
`kernelgraph bench service` attempts as that benchmark does (batches of 1,000 from 2 threads; with
`--batch-size 12`, the transactions of about a dozen attempts that group commit makes of concurrent
single writes). Variants run in the order A..Z then Z..A, after one uncounted run of `full` that
warms the server, so that neither the database's growth nor a fresh JVM's compiling favours any.
Each rate is the mean of its two runs, with the CPU that the service and Neo4j spent per attempt.

- `python only`: the service's own work per attempt (validation and row building, one thread, no
  write), the floor under any database work.
- `floor: plain CREATE of what each attempt adds`: the elements that are new with each attempt (the
  attempt, its child kernel and measurement, an aggregate, their relationships), by CREATE: no
  MERGE, no parents, no read-modify-write. No write of this graph can be cheaper, so its rate bounds
  what any rewrite of record_attempts could reach.
- `floor: the attempt node alone`: one node per attempt and nothing else, below any graph.

Saves results/ingest-ablation-<UTC time>.json.
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

from kernelgraph.bench.reports import run_context, save_report
from kernelgraph.bench.service import (
    TARGETS,
    BenchOptions,
    cpu_seconds,
    generate,
    local_neo4j_pid,
)
from kernelgraph.core.settings import get_settings
from kernelgraph.service import migrate, namespaces
from kernelgraph.service.knowledge import KnowledgeService
from kernelgraph.service.queries import QueryRegistry, registry
from kernelgraph.service.store import GraphStore, open_driver

FULL = registry()["record_attempts"]

# Only what each attempt adds to the graph, by CREATE (the constraints still check each key).
FLOOR = """
UNWIND $rows AS row
MATCH (h:HardwareTarget {namespace: $namespace, name: row.target})
MATCH (t:Transform {namespace: $namespace, name: row.transform})
CREATE (a:Attempt {namespace: $namespace, attempt_key: row.attempt_key})
SET a += row.attempt, a.write_token = $write_token, a.created_at = datetime()
CREATE (c:Kernel {namespace: $namespace, kernel_id: row.child.kernel_id})
SET c += row.child.props, c.created_at = datetime(), c.write_token = $write_token
CREATE (a)-[:APPLIED]->(t), (a)-[:ON_TARGET]->(h), (a)-[:PRODUCED]->(c)
CREATE (e:StateEvidence {namespace: $namespace, measurement_id: row.attempt_key, transform: row.transform,
                         params_json: row.attempt.params_json})
SET e.attempts = 1, e.successes = 0, e.runtime_attempts = 1, e.sum_log_speedup = 0.0,
    e.sum_sq_log_speedup = 0.0, e.attempt_keys = [row.attempt_key], e.target = row.target,
    e.created_at = datetime(), e.updated_at = datetime()
CREATE (a)-[:COUNTED_IN]->(e)
FOREACH (m IN row.child_measurements |
  CREATE (cm:Measurement {namespace: $namespace, measurement_id: m.measurement_id})
  SET cm += m.props, cm.recorded_at = datetime(), cm.write_token = $write_token
  CREATE (a)-[:RESULTED_IN]->(cm), (cm)-[:OF]->(c), (cm)-[:ON]->(h))
RETURN row.attempt_key AS attempt_key, true AS created
"""
# Below any graph: one node per attempt, with the attempt's own properties, and nothing else.
ATTEMPT_NODE_ONLY = """
UNWIND $rows AS row
CREATE (a:Attempt {namespace: $namespace, attempt_key: row.attempt_key})
SET a += row.attempt, a.write_token = $write_token, a.created_at = datetime()
RETURN row.attempt_key AS attempt_key, true AS created
"""


def _cut(text: str, start: str, end: str) -> str:
    """`text` without the span from `start` through `end` (both must be there: the query changed?)."""
    i = text.find(start)
    j = text.find(end, i)
    if i < 0 or j < 0:
        raise ValueError(f"record_attempts.cypher changed: the cut {start!r}..{end!r} no longer applies")
    return text[:i] + text[j + len(end) :]


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
            "SET pm[$source_vectors[pm.counter_source]] =\n"
            "            [i IN pm.signature_dims | pm.signature[i] / $source_scales[pm.counter_source][i]])",
            "SET pm.x = 1)",
        ),
        "no per-state aggregates": _cut(
            text, "    // An implausible attempt (times beyond", "agg.updated_at = datetime()\n"
        ),
    }
    out["floor: plain CREATE of what each attempt adds"] = FLOOR
    out["floor: the attempt node alone"] = ATTEMPT_NODE_ONLY
    unchanged = [name for name, variant in out.items() if name != "full" and variant == text]
    if unchanged:
        raise ValueError(f"record_attempts.cypher changed: these cuts no longer apply: {unchanged}")
    return out


def main(measurements: int, results_dir: Path, batch_size: int = 1000) -> dict[str, Any]:
    settings = get_settings()
    driver = open_driver(settings)
    store = GraphStore(driver, settings.neo4j_database)
    migrate.apply(store)
    data = generate(BenchOptions(measurements=measurements))
    batches = [data.attempts[i : i + batch_size] for i in range(0, len(data.attempts), batch_size)]
    texts = variants()
    created: list[str] = []
    neo4j_pid = local_neo4j_pid(settings)
    cpu_ms: dict[str, list[dict[str, float | None]]] = {}
    group_sizes: dict[str, list[float]] = {}  # attempts per transaction, per run

    def neo4j_cpu() -> float | None:  # None: not a local server whose process this machine can read
        return cpu_seconds(neo4j_pid, tree=True) if neo4j_pid else None

    def rate(name: str) -> float:
        variant = GraphStore(driver, settings.neo4j_database)
        variant.queries = QueryRegistry(
            {**registry().queries, "record_attempts": dataclasses.replace(FULL, text=texts[name])}
        )
        knowledge = KnowledgeService(variant)
        namespace = f"ablation-{uuid.uuid4().hex[:8]}"
        created.append(namespace)
        knowledge.upsert_targets(namespace, list(TARGETS))
        started, service_started, neo4j_started = time.perf_counter(), time.process_time(), neo4j_cpu()
        with ThreadPoolExecutor(2) as pool:
            list(pool.map(lambda batch: knowledge.record_attempts(namespace, batch), batches))
        seconds, service_ended, neo4j_ended = time.perf_counter() - started, time.process_time(), neo4j_cpu()
        # CPU per attempt shows whether a variant was bound by the 2 cores or by waiting.
        neo4j_seconds = None if neo4j_started is None or neo4j_ended is None else neo4j_ended - neo4j_started
        cpu_ms.setdefault(name, []).append({
            "service": round((service_ended - service_started) * 1e3 / len(data.attempts), 3),
            "neo4j": None if neo4j_seconds is None else round(neo4j_seconds * 1e3 / len(data.attempts), 3),
        })  # fmt: skip
        group_sizes.setdefault(name, []).append(
            round(len(data.attempts) / max(1, knowledge.writer.transactions), 1)
        )
        return len(data.attempts) / seconds

    def python_only() -> float:
        knowledge = KnowledgeService(store)
        knowledge.writer.submit = lambda *args, **kwargs: {}  # type: ignore[method-assign]
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
        "batch_size": batch_size, "threads": 2, "runs": {},
    }  # fmt: skip
    try:
        # A fresh server's first writes also compile its write path; that run is not counted.
        result["warmup_attempts_per_s"] = round(rate("full"), 1)
        cpu_ms.pop("full")
        group_sizes.pop("full")
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
    result["cpu_ms_per_attempt"] = cpu_ms
    result["attempts_per_transaction"] = group_sizes
    result["neo4j_pid_found"] = neo4j_pid is not None
    save_report(result, results_dir, "ingest-ablation")
    return result


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("measurements", type=int, nargs="?", default=20_000)
    parser.add_argument("--batch-size", type=int, default=1000, help="attempts per record call")
    parser.add_argument("--results-dir", type=Path, default=Path("results"))
    options = parser.parse_args()
    print(json.dumps(main(options.measurements, options.results_dir, options.batch_size), indent=1))
