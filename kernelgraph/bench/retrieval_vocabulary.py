"""What retrieval within the query's vocabulary costs and gives, on `kernelgraph bench service`'s graph.

    python -m kernelgraph.bench.retrieval_vocabulary [MEASUREMENTS] [--namespace NS] [--queries N]
        [--results-dir results]

A diagnostic, not a product path. It ingests the service benchmark's graph into a namespace of its own
(or reads one that benchmark left, `--namespace`; its summary names it), then times each query
signature three ways, interleaved so that load drifts hit all alike: without `transforms`, with a
vocabulary of half the benchmark's transforms, and with a quarter. Per way: latency percentiles, the
neighbours found (k = 20), and the share of the returned transforms within the half vocabulary (without
the field, how much of the answer a query that can apply only those could use). Saves results/retrieval-vocabulary-<UTC time>.json;
docs/retrieval.md ("Within the query's vocabulary") reads it.
"""

from __future__ import annotations

import argparse
import json
import random
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from rich.console import Console

from kernelgraph.bench.reports import run_context, save_report
from kernelgraph.bench.service import (
    TARGETS,
    TRANSFORMS,
    BenchOptions,
    _query_signatures,
    generate,
    retrieve_request,
)
from kernelgraph.bench.stats import percentiles
from kernelgraph.core.settings import get_settings
from kernelgraph.service import migrate
from kernelgraph.service.knowledge import KnowledgeService
from kernelgraph.service.store import GraphStore, open_driver

VOCABULARIES: dict[str, tuple[str, ...] | None] = {
    "everything": None,
    "half": TRANSFORMS[: len(TRANSFORMS) // 2],
    "quarter": TRANSFORMS[: len(TRANSFORMS) // 4],
}
HALF = frozenset(VOCABULARIES["half"] or ())
WARM_UP = 5  # first queries per way, left out: they plan the queries


def run(measurements: int, namespace: str | None, queries: int, console: Console) -> dict[str, Any]:
    settings = get_settings()
    driver = open_driver(settings)
    try:
        store = GraphStore(driver, settings.neo4j_database)
        migrate.apply(store)
        knowledge = KnowledgeService(store)
        ingested = namespace is None
        if namespace is None:
            namespace = f"vocabulary-{uuid.uuid4().hex[:10]}"
            knowledge.upsert_targets(namespace, list(TARGETS))
            options = BenchOptions(measurements=measurements)
            with console.status(f"ingesting {measurements} measurements into {namespace}..."):
                data = generate(options)
                batches = [
                    data.attempts[i : i + options.batch_size]
                    for i in range(0, len(data.attempts), options.batch_size)
                ]
                with ThreadPoolExecutor(max_workers=options.threads) as pool:
                    list(pool.map(lambda batch: knowledge.record_attempts(namespace, batch), batches))
        signatures = _query_signatures(random.Random(7), queries + WARM_UP)
        ways: dict[str, dict[str, list[float]]] = {
            name: {"ms": [], "neighbours": [], "applicable": []} for name in VOCABULARIES
        }
        with console.status(f"{len(signatures)} queries x {len(VOCABULARIES)} ways..."):
            for i, signature in enumerate(signatures):
                for name, vocabulary in VOCABULARIES.items():
                    request = retrieve_request(i, signature).model_copy(
                        update={"transforms": list(vocabulary) if vocabulary else None}
                    )
                    t0 = time.perf_counter()
                    answer = knowledge.retrieve([namespace], request)
                    ms = (time.perf_counter() - t0) * 1e3
                    if i < WARM_UP:
                        continue
                    ways[name]["ms"].append(ms)
                    ways[name]["neighbours"].append(answer.neighbours)
                    ways[name]["applicable"].append(
                        sum(t.transform in HALF for t in answer.transforms) / max(1, len(answer.transforms))
                    )
    finally:
        driver.close()
    summary = {
        name: {
            **{k: round(v, 2) for k, v in percentiles(way["ms"]).items()},
            "mean_neighbours": round(sum(way["neighbours"]) / len(way["neighbours"]), 2),
            "share_of_transforms_within_half": round(sum(way["applicable"]) / len(way["applicable"]), 3),
        }
        for name, way in ways.items()
    }
    return {
        "benchmark": "retrieval-vocabulary", **run_context(), "namespace": namespace,
        "ingested_here": ingested, "measurements": measurements if ingested else None, "queries": queries,
        "vocabularies": {name: list(v) if v else None for name, v in VOCABULARIES.items()}, "ways": summary,
    }  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("measurements", nargs="?", type=int, default=100_000)
    parser.add_argument("--namespace", default=None, help="a namespace `kernelgraph bench service` left")
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--results-dir", default="results")
    args = parser.parse_args()
    console = Console(stderr=True)
    report = run(args.measurements, args.namespace, args.queries, console)
    path = save_report(report, Path(args.results_dir), "retrieval-vocabulary")
    print(json.dumps({"saved": str(path), "load": report["load_average_at_start"], "ways": report["ways"]}))


if __name__ == "__main__":
    main()
