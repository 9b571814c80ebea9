"""Where retrieval's tail after ingestion comes from: each query's time, the client's and Neo4j's own.

    python -m kernelgraph.bench.retrieval_warmup [MEASUREMENTS] [--warm] [--results-dir results]

A diagnostic, not a product path; run it on a freshly started Neo4j (`kernelgraph neo4j stop`, remove
its home, `start`, `schema apply`), since the question is what a fresh JVM does. It ingests
`kernelgraph bench service`'s graph into a namespace of its own (with `--warm`, after that benchmark's
read-path warm-up), then makes 400 retrievals and times every query of each: in the client, and as
Neo4j reports it (result available + consumed). It reports the first and the second 200 retrievals'
percentiles, and the slowest 5% and the 20 around the median broken down by query. Saves
results/retrieval-warmup-<UTC time>.json.
"""

from __future__ import annotations

import argparse
import json
import random
import time
import uuid
from collections import defaultdict
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from rich.console import Console

from kernelgraph.bench.reports import run_context, save_report
from kernelgraph.bench.service import (
    TARGETS,
    BenchOptions,
    _query_signatures,
    _warm_up,
    generate,
    percentiles,
    retrieve_request,
)
from kernelgraph.core.settings import get_settings
from kernelgraph.service.knowledge import KnowledgeService
from kernelgraph.service.store import GraphStore, _row, open_driver

RETRIEVALS = 400


def _breakdown(retrievals: list[dict[str, Any]]) -> dict[str, Any]:
    """Mean milliseconds per retrieval: each query's, in the client and in Neo4j, and outside the queries."""
    per_query: dict[str, dict[str, float]] = defaultdict(lambda: {"client_ms": 0.0, "neo4j_ms": 0.0})
    outside = 0.0
    for retrieval in retrievals:
        for name, client_ms, neo4j_ms in retrieval["queries"]:
            per_query[name]["client_ms"] += client_ms / len(retrievals)
            per_query[name]["neo4j_ms"] += neo4j_ms / len(retrievals)
        outside += (retrieval["ms"] - sum(q[1] for q in retrieval["queries"])) / len(retrievals)
    return {
        "retrievals": len(retrievals),
        "mean_ms": round(sum(r["ms"] for r in retrievals) / len(retrievals), 2),
        "queries": {name: {k: round(v, 2) for k, v in times.items()} for name, times in per_query.items()},
        "outside_queries_ms": round(outside, 2),
    }


def main(measurements: int, warm: bool, results_dir: Path) -> dict[str, Any]:
    settings = get_settings()
    driver = open_driver(settings)
    store = GraphStore(driver, settings.neo4j_database)
    knowledge = KnowledgeService(store)
    namespace = f"warmup-diag-{uuid.uuid4().hex[:8]}"
    options = BenchOptions(measurements=measurements)
    result: dict[str, Any] = {
        "benchmark": "retrieval-warmup", "started_at": datetime.now(UTC).isoformat(timespec="seconds"),
        **run_context(), "namespace": namespace, "measurements": measurements, "warm": warm,
    }  # fmt: skip
    if warm:
        result["warmup"] = _warm_up(knowledge, f"{namespace}-warmup", options, Console(stderr=True))
    data = generate(options)
    knowledge.upsert_targets(namespace, list(TARGETS))
    batches = [data.attempts[i : i + 1000] for i in range(0, len(data.attempts), 1000)]
    started = time.perf_counter()
    with ThreadPoolExecutor(2) as pool:
        list(pool.map(lambda batch: knowledge.record_attempts(namespace, batch), batches))
    result["ingest_attempts_per_s"] = round(len(data.attempts) / (time.perf_counter() - started), 1)
    del data, batches

    timings: list[tuple[str, float, float]] = []

    def timed_run_in(tx: Any, name: str, /, **params: Any) -> list[dict[str, Any]]:
        query = store._query(name, params)
        t0 = time.perf_counter()
        records = tx.run(query.cypher, params)
        rows = [_row(record) for record in records]
        summary = records.consume()
        neo4j_ms = (summary.result_available_after or 0) + (summary.result_consumed_after or 0)
        timings.append((name, (time.perf_counter() - t0) * 1e3, float(neo4j_ms)))
        return rows

    store.run_in = timed_run_in  # type: ignore[method-assign]
    timed: list[dict[str, Any]] = []
    for i, signature in enumerate(_query_signatures(random.Random(1), RETRIEVALS + 5)):
        timings.clear()
        t0 = time.perf_counter()
        knowledge.retrieve([namespace], retrieve_request(i, signature))
        if i >= 5:  # as the benchmark: the first few plan the queries
            timed.append({"index": i, "ms": (time.perf_counter() - t0) * 1e3, "queries": list(timings)})
    driver.close()
    half = RETRIEVALS // 2
    by_time = sorted(timed, key=lambda r: -r["ms"])
    middle = len(by_time) // 2
    slowest = by_time[: len(by_time) // 20]
    result.update(
        all={k: round(v, 2) for k, v in percentiles([r["ms"] for r in timed]).items()},
        first_200={k: round(v, 2) for k, v in percentiles([r["ms"] for r in timed[:half]]).items()},
        next_200={k: round(v, 2) for k, v in percentiles([r["ms"] for r in timed[half:]]).items()},
        slowest_5_percent=_breakdown(slowest),
        around_median=_breakdown(by_time[middle - 10 : middle + 10]),
        slowest_5_percent_at=sorted(r["index"] for r in slowest),
    )
    save_report(result, results_dir, "retrieval-warmup")
    return result


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("measurements", type=int, nargs="?", default=100_000)
    parser.add_argument("--warm", action="store_true", help="warm the read path first, as bench service does")
    parser.add_argument("--results-dir", type=Path, default=Path("results"))
    options = parser.parse_args()
    print(json.dumps(main(options.measurements, options.warm, options.results_dir), indent=1))
