"""Where Neo4j's CPU goes while the service ingests: Java Flight Recorder samples of the local server.

    python -m kernelgraph.bench.neo4j_profile [MEASUREMENTS] [--results-dir results]

Records `kernelgraph bench service`'s attempts (batches of 1,000 from 2 threads, as that benchmark
does) into a throw-away namespace of the local Neo4j (deleted afterwards) while JFR samples the
server's threads (`jcmd <pid> JFR.start`, JDK 17's own profiler), then counts each sample under
every area its stack passes through (the Cypher runtime, index maintenance, the page cache, ...), so
the shares add up to more than 100%. JFR keeps the innermost 64 frames of a stack, so areas near the
bottom of deep stacks (the Cypher runtime's interpreted plans) are undercounted. (Raising the depth
at run time with `jcmd JFR.configure stackdepth=...` crashed the server JVM here once: not done.) A diagnostic for docs/scaling.md; saves
results/neo4j-profile-<UTC time>.json.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import tempfile
import time
import uuid
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from kernelgraph.bench.reports import run_context, save_report
from kernelgraph.bench.service import TARGETS, BenchOptions, generate, local_neo4j_pid
from kernelgraph.core.settings import get_settings
from kernelgraph.service import migrate, namespaces
from kernelgraph.service.knowledge import KnowledgeService
from kernelgraph.service.store import GraphStore, open_driver

# (area, Java package prefix): the first matching prefix names a frame's area.
AREAS = [
    ("Cypher runtime (executing plans)", "org.neo4j.cypher.internal.runtime"),
    ("Cypher planning and compiling", "org.neo4j.cypher.internal.compiler"),
    ("Cypher, other", "org.neo4j.cypher"),
    ("kernel API (cursors, reads and writes of nodes and properties)", "org.neo4j.kernel.impl.newapi"),
    ("index maintenance and seeks (schema indexes)", "org.neo4j.kernel.impl.index"),
    ("index B-trees (GBPTree)", "org.neo4j.index.internal.gbptree"),
    ("vector index (Lucene)", "org.apache.lucene"),
    ("page cache", "org.neo4j.io.pagecache"),
    ("record storage", "org.neo4j.internal.recordstorage"),
    ("transaction state and commit", "org.neo4j.kernel.impl.api"),
    ("transaction log", "org.neo4j.kernel.impl.transaction"),
    ("locks", "org.neo4j.lock"),
    ("Bolt and packstream (the wire)", "org.neo4j.bolt"),
    ("values (property conversion)", "org.neo4j.values"),
]


def summarize(jfr_file: Path, top: int = 15) -> dict[str, Any]:
    """Share of samples per area (inclusive) and per innermost method (self), from jdk.ExecutionSample."""
    out = subprocess.run(["jfr", "print", "--json", "--events", "jdk.ExecutionSample", str(jfr_file)],
                         capture_output=True, text=True, check=True).stdout  # fmt: skip
    samples = 0
    inclusive: Counter[str] = Counter()
    innermost: Counter[str] = Counter()
    for event in json.loads(out)["recording"]["events"]:
        frames = (event["values"].get("stackTrace") or {}).get("frames") or []
        if not frames:
            continue
        samples += 1
        method = frames[0]["method"]
        innermost[f"{method['type']['name'].replace('/', '.')}.{method['name']}"] += 1
        areas = set()
        for frame in frames:
            java_type = frame["method"]["type"]["name"].replace("/", ".")
            area = next((name for name, prefix in AREAS if java_type.startswith(prefix)), None)
            if area is not None:
                areas.add(area)
        inclusive.update(areas)
    return {
        "samples": samples,
        "inclusive_share_by_area": {a: round(n / samples, 3) for a, n in inclusive.most_common()} if samples else {},
        "top_innermost_methods": [{"method": m, "share": round(n / samples, 3)} for m, n in innermost.most_common(top)]
        if samples else [],
    }  # fmt: skip


def main(measurements: int, results_dir: Path) -> dict[str, Any]:
    settings = get_settings()
    pid = local_neo4j_pid(settings)
    if pid is None:
        raise SystemExit("the local Neo4j is not running (kernelgraph neo4j start): JFR samples a local JVM")
    driver = open_driver(settings)
    store = GraphStore(driver, settings.neo4j_database)
    migrate.apply(store)
    data = generate(BenchOptions(measurements=measurements))
    batches = [data.attempts[i : i + 1000] for i in range(0, len(data.attempts), 1000)]
    knowledge = KnowledgeService(store)
    namespace = f"profile-{uuid.uuid4().hex[:8]}"
    knowledge.upsert_targets(namespace, list(TARGETS))
    jfr_file = Path(tempfile.mkdtemp(prefix="kernelgraph-jfr-")) / "ingest.jfr"
    # The server JVM is the launcher's child; jcmd needs its own pid.
    server = subprocess.run(["pgrep", "-P", str(pid), "java"], capture_output=True, text=True).stdout.split()
    jvm = server[0] if server else str(pid)
    subprocess.run(["jcmd", jvm, "JFR.start", "name=kernelgraph-ingest", "settings=profile",
                    f"filename={jfr_file}"], check=True, capture_output=True)  # fmt: skip
    try:
        started = time.perf_counter()
        with ThreadPoolExecutor(2) as pool:
            list(pool.map(lambda batch: knowledge.record_attempts(namespace, batch), batches))
        seconds = time.perf_counter() - started
    finally:
        subprocess.run(["jcmd", jvm, "JFR.stop", "name=kernelgraph-ingest"], check=True, capture_output=True)
        namespaces.delete(store, namespace)
        driver.close()
    result: dict[str, Any] = {
        "benchmark": "neo4j-profile", "started_at": datetime.now(UTC).isoformat(timespec="seconds"),
        **run_context(), "workload": "bench service ingestion, batches of 1,000 from 2 threads",
        "measurements": data.measurements, "attempts": len(data.attempts), "seconds": round(seconds, 1),
        "attempts_per_s": round(len(data.attempts) / seconds, 1), **summarize(jfr_file),
    }  # fmt: skip
    save_report(result, results_dir, "neo4j-profile")
    return result


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("measurements", type=int, nargs="?", default=30_000)
    parser.add_argument("--results-dir", type=Path, default=Path("results"))
    options = parser.parse_args()
    print(json.dumps(main(options.measurements, options.results_dir), indent=1))
