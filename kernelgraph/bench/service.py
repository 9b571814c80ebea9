"""`kernelgraph bench service`: how fast the knowledge service ingests and retrieves at scale.

It generates a realistic experience graph in a fresh namespace: several CPU and CUDA targets,
access patterns, transforms, and measured states whose counter signatures cluster by bottleneck
(compute-bound, memory-bound, launch-bound, cache-thrashing, spilling, low occupancy) with noise;
each transform's effect depends on the bottleneck, so retrieval has something to find. Then:

- warm-up (unless `--cold`): a small graph in its own namespace and WARMUP_RETRIEVALS retrievals from
  it, so that the retrievals measured below do not pay a fresh server's JIT compilation of its read
  path (the first 100 warm-up retrievals' p50/p95 are reported: what a just-started server answers in);
- ingestion: attempts/s through `KnowledgeService.record_attempts` (batches of 1,000 validated as a
  client's JSON would be, from `threads` threads at once);
- retrieval: `KnowledgeService.retrieve` latency in-process (server side) and `POST /v1/retrieve`
  end to end over HTTP (uvicorn in a thread on a free port), p50/p95/p99;
- recall@10 of the vector indexes, searched as the service searches them (`search_index`: fetch more
  until the rows are the true nearest), against exact scoring (nearest_states_by_signature_exact) on
  random queries; a returned state whose score ties the exact 10th score counts as a hit (ties make
  the exact top 10 ambiguous); the `fetch_k` both reached (`recall_fetch_k`, `retrieve_fetch_k`);
- memory: this process's RSS (it hosts the service) and the local Neo4j JVM's RSS (from /proc).

Results go to `results/service-bench-<UTC time>.json` and `results/service-bench-latest.json`.
"""

from __future__ import annotations

import logging
import math
import os
import random
import socket
import statistics
import threading
import time
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor, as_completed
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from rich.console import Console

from kernelgraph.bench.reports import progress_bar, publish, report_error, run_context
from kernelgraph.bench.stats import percentiles
from kernelgraph.core.models import MAX_BATCH, RetrieveRequest
from kernelgraph.core.settings import Settings
from kernelgraph.core.signature import (
    DIMENSION_NAMES,
    SIGNATURE_DIM,
    CounterSource,
    index_searches,
    signature_from_values,
    source_dimensions,
)

log = logging.getLogger(__name__)

ATTEMPTS_PER_STATE = 3  # transforms tried from each measured state
FAILURE_RATE = 0.1  # attempts that do not compile or are incorrect (no child measurement)
SIGNATURE_NOISE = 0.06
RECALL_K = 10
RETRIEVE_K = 20  # neighbours per timed retrieval
GOALS = {"ingest_attempts_per_s": 5_000.0, "retrieve_p95_ms": 20.0, "recall_at_10": 0.95}
LARGE_GRAPH = 1_000_000  # from this many measurements the retrieval goal is 50 ms (issue 13)
LARGE_RETRIEVE_P95_MS = 50.0
# Before ingesting, retrieve this many times from a graph of this many measurements (above the exact-search
# size, so the vector-index path runs): a freshly started Neo4j compiles its read path (the JIT) during the
# first hundred or so retrievals (their p95 was 40-51 ms against 12.5-16.6 ms later). A server in service
# has long done that; `--cold` measures without it (docs/scaling.md, "A fresh server's first retrievals").
WARMUP_MEASUREMENTS = 5_000
WARMUP_RETRIEVALS = 300

TARGETS: tuple[dict[str, Any], ...] = (
    {"name": "bench-cpu-v3", "kind": "cpu", "arch": "x86-64-v3", "peak_gflops": 600.0, "peak_gbps": 40.0,
     "cores": 8, "isa": "x86-64-v3"},
    {"name": "bench-cpu-v4", "kind": "cpu", "arch": "x86-64-v4", "peak_gflops": 1500.0, "peak_gbps": 80.0,
     "cores": 16, "isa": "x86-64-v4"},
    {"name": "bench-sm80", "kind": "cuda", "arch": "sm80", "peak_gflops": 19500.0, "peak_gbps": 2039.0,
     "sm_count": 108},
    {"name": "bench-sm90", "kind": "cuda", "arch": "sm90", "peak_gflops": 66900.0, "peak_gbps": 3350.0,
     "sm_count": 132},
)  # fmt: skip
PATTERNS = ("dense-matmul", "row-reduction", "row-softmax", "stencil", "scan", "gather", "scatter",
            "contiguous-stream")  # fmt: skip
TRANSFORMS = ("unroll", "vectorize", "tile", "smem-tiling", "fuse", "split-k", "block-size", "prefetch",
              "loop-interchange", "register-blocking", "warp-shuffle", "persistent")  # fmt: skip
# Bottleneck clusters: dimension -> value at the centre (others 0.3); see core/signature.py.
BOTTLENECKS: dict[str, dict[str, float]] = {
    "compute-bound": {"compute_fraction": 0.85, "memory_fraction": 0.2, "ridge_position": 0.8,
                      "issue_efficiency": 0.8, "speed_of_light": 0.85},
    "memory-bound": {"compute_fraction": 0.1, "memory_fraction": 0.8, "ridge_position": 0.15,
                     "speed_of_light": 0.8},
    "launch-bound": {"compute_fraction": 0.02, "memory_fraction": 0.03, "launch_overhead_share": 0.9,
                     "speed_of_light": 0.03},
    "cache-thrash": {"memory_fraction": 0.35, "l1_miss_rate": 0.8, "llc_miss_rate": 0.7, "speed_of_light": 0.35},
    "spilling": {"spill_pressure": 0.7, "register_pressure": 0.95, "issue_efficiency": 0.2},
    "low-occupancy": {"parallel_efficiency": 0.1, "issue_efficiency": 0.25, "compute_fraction": 0.2,
                      "memory_fraction": 0.25},
}  # fmt: skip


def source_of(target: dict[str, Any]) -> CounterSource:
    """The counter source a target's synthetic measurements come from (each with its own mask)."""
    return CounterSource.NVIDIA_NCU if target["kind"] == "cuda" else CounterSource.CPU_CACHEGRIND


@dataclass(frozen=True)
class BenchOptions:
    measurements: int
    quick: bool = False
    threads: int = 2
    batch_size: int = MAX_BATCH
    queries: int | None = None  # retrieval and recall queries each; default 200 (quick: 25)
    seed: int = 7
    warm_up: bool = True  # warm Neo4j's read path before ingesting (WARMUP_RETRIEVALS)

    @property
    def query_count(self) -> int:
        return self.queries if self.queries is not None else (25 if self.quick else 200)


def _centre(bottleneck: str) -> list[float]:
    centre = [0.3] * SIGNATURE_DIM
    for name, value in BOTTLENECKS[bottleneck].items():
        centre[DIMENSION_NAMES.index(name)] = value
    return centre


def _noisy(rng: random.Random, centre: Sequence[float], source: CounterSource) -> list[float | None]:
    """A signature near `centre` on the dimensions `source` measures, null on the others."""
    measured = set(source_dimensions(source))
    return [
        round(min(1.0, max(0.0, c + rng.gauss(0.0, SIGNATURE_NOISE))), 6) if i in measured else None
        for i, c in enumerate(centre)
    ]


@dataclass
class Generated:
    attempts: list[dict[str, Any]]
    measurements: int
    states: int
    tasks: int


def generate(options: BenchOptions, on_state: Callable[[int], None] | None = None) -> Generated:
    """Attempt records (as a client would send them) holding about `options.measurements` measurements."""
    rng = random.Random(options.seed)
    names = list(BOTTLENECKS)
    centres = {b: _centre(b) for b in names}
    # Each transform helps some bottlenecks and hurts others (mean log speedup per pair).
    effect = {(b, t): rng.choice((-0.3, -0.1, 0.0, 0.15, 0.4, 0.7)) for b in names for t in TRANSFORMS}
    n_tasks = max(8, min(200, options.measurements // 500))
    tasks = [(f"task-{i:03d}", PATTERNS[i % len(PATTERNS)], names[i % len(names)]) for i in range(n_tasks)]
    attempts: list[dict[str, Any]] = []
    measurements = states = 0
    while measurements < options.measurements:
        task, pattern, home = tasks[rng.randrange(n_tasks)]
        bottleneck = home if rng.random() < 0.8 else rng.choice(names)
        target = TARGETS[rng.randrange(len(TARGETS))]
        cuda = target["kind"] == "cuda"
        counter_source = source_of(target)
        source = f"// {task} state {states}\n" + (
            "__global__ void k(const float* x, float* y, int n) {\n  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
            if cuda else "void k(const float* restrict x, float* restrict y, int n) {\n  for (int i = 0; i < n; ++i)\n"
        ) + f"    y[i] = x[i] * {rng.random():.6f}f; // {pattern}\n}}\n"  # fmt: skip
        parent = {"task": task, "backend": "triton" if cuda else "c", "source": source, "patterns": [pattern]}
        median = math.exp(rng.uniform(math.log(2e3), math.log(5e7)))
        parent_measurement = {
            "median_ns": median, "iqr_ns": median * 0.02, "trials": 21, "correct": True,
            "counter_source": counter_source.value,
            "counters": {"time_ns": median}, "signature": _noisy(rng, centres[bottleneck], counter_source),
        }  # fmt: skip
        states += 1
        measurements += 1
        for transform in rng.sample(TRANSFORMS, ATTEMPTS_PER_STATE):
            factor = rng.choice((2, 4, 8))
            child = {**parent, "source": f"{source}// {transform} x{factor}\n"}
            key = f"bench:{states}:{transform}"
            base = {
                "attempt_key": key, "run_id": "bench", "agent": "service-bench", "target": target["name"],
                "parent": parent, "parent_measurement": parent_measurement,
                "transform": {"name": transform, "params": {"factor": factor}}, "child": child,
            }  # fmt: skip
            if rng.random() < FAILURE_RATE:
                outcome = rng.choice(("compile_error", "incorrect"))
                attempts.append({**base, "outcome": outcome, "diagnosis": f"{outcome} (synthetic)"})
                continue
            speedup = math.exp(effect[(bottleneck, transform)] + rng.gauss(0.0, 0.15))
            child_median = median / speedup
            attempts.append({
                **base, "speedup": speedup, "outcome": "kept" if speedup > 1.0 else "discarded",
                "child_measurement": {
                    **parent_measurement, "median_ns": child_median, "iqr_ns": child_median * 0.02,
                    "parent_median_ns": median,
                    "counters": {"time_ns": child_median},
                    "signature": _noisy(rng, centres[bottleneck], counter_source),
                },
            })  # fmt: skip
            measurements += 1
        if on_state is not None:
            on_state(measurements)
    return Generated(attempts, measurements, states, n_tasks)


def rss_mb(pid: int | str = "self") -> float | None:
    """Resident set size of a process in MiB, from /proc (None where unavailable)."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024.0
    except (OSError, ValueError):
        return None
    return None


def process_tree_rss_mb(pid: int) -> float | None:
    """RSS of a process and its descendants (Neo4j's launcher forks the server JVM as a child)."""
    total = rss_mb(pid)
    if total is None:
        return None
    try:
        children = [
            int(c)
            for task in Path(f"/proc/{pid}/task").iterdir()
            for c in (task / "children").read_text().split()
        ]
    except (OSError, ValueError):
        children = []
    for child in children:
        total += process_tree_rss_mb(child) or 0.0
    return total


def cpu_seconds(pid: int, tree: bool = False) -> float | None:
    """User + system CPU seconds of a process (and, with `tree`, its descendants), from /proc."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        total = (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return None
    if tree:
        try:
            children = [int(c) for task in Path(f"/proc/{pid}/task").iterdir()
                        for c in (task / "children").read_text().split()]  # fmt: skip
        except (OSError, ValueError):
            children = []
        total += sum(cpu_seconds(child, tree=True) or 0.0 for child in children)
    return total


def cpu_ms_per(
    cpu: Mapping[str, float | None],
    count: int,
    processes: Sequence[str] = ("service", "neo4j", "agents"),
    digits: int | None = 3,
) -> dict[str, float]:
    """CPU milliseconds per unit of work (an attempt, a request), by process, rounded to `digits` (None:
    not rounded); a process whose CPU was not measured (None, or not there) is left out."""
    per = {p: s * 1e3 / max(1, count) for p in processes if (s := cpu.get(p)) is not None}
    return per if digits is None else {p: round(ms, digits) for p, ms in per.items()}


def local_neo4j_pid(settings: Settings) -> int | None:
    """The local Neo4j's process id (None when the configured server is not the local one)."""
    from kernelgraph.service.neo4j_local import LocalNeo4j

    if not settings.uses_local_server:
        return None
    return LocalNeo4j(settings).status().pid


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextmanager
def serve_http(settings: Settings, driver: Any) -> Iterator[str]:
    """The real app under uvicorn in a thread on a free port (sharing this process's driver); its URL."""
    import uvicorn

    from kernelgraph.service.api.app import create_app

    port = _free_port()
    server = uvicorn.Server(
        uvicorn.Config(create_app(settings, driver=driver), host="127.0.0.1", port=port, log_level="warning")
    )
    thread = threading.Thread(target=server.run, name=f"bench-uvicorn-{port}", daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            raise RuntimeError("uvicorn did not start")
        time.sleep(0.02)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=15)


def _query_signatures(rng: random.Random, count: int) -> list[list[float | None]]:
    """Queries shaped like the stored states: query i is measured as target i's source measures."""
    names = list(BOTTLENECKS)
    return [
        _noisy(rng, _centre(rng.choice(names)), source_of(TARGETS[i % len(TARGETS)])) for i in range(count)
    ]


def search_params(signature: Sequence[float | None], k: int, namespace: str) -> dict[str, Any]:
    """The parameters of the exact and the index query for one signature, as the service builds them
    (the index query's `fetch_k` and `k` are `search_index`'s to set)."""
    from kernelgraph.core.signature import MIN_SHARED_DIMENSIONS, SOURCE_SCALES_PARAM, SOURCE_UNITS_PARAM

    query = signature_from_values(signature)
    measured = list(query.measured)
    common = {"k": k, "namespaces": [namespace], "exclude_tasks": [], "transforms": None, "verified_only": False}  # fmt: skip
    return {
        "exact": {**common, "signature": list(query.vector), "measured": measured,
                  "min_shared": min(len(measured), MIN_SHARED_DIMENSIONS), "complete": [True, False],
                  "source_scales": SOURCE_SCALES_PARAM, "source_units": SOURCE_UNITS_PARAM},
        "index": {key: value for key, value in common.items() if key != "k"}
        | {"searches": [s.as_param() for s in index_searches(query)]},
    }  # fmt: skip


def recall_at_k(store: Any, namespace: str, signatures: Sequence[list[float | None]]) -> dict[str, Any]:
    """Mean recall@10 of the per-source vector indexes, searched as the service searches them (its
    over-fetch rule, `search_index`, remembered from query to query as the service remembers it),
    against exact masked scoring, and the latency of each search."""
    from kernelgraph.service.retrieval import MAX_FETCH_K, OVERFETCH, search_index

    recalls: list[float] = []
    index_ms: list[float] = []
    exact_ms: list[float] = []
    overfetch = OVERFETCH
    for signature in signatures:
        params = search_params(signature, RECALL_K, namespace)
        t0 = time.perf_counter()
        exact = store.read("nearest_states_by_signature_exact", **params["exact"])
        t1 = time.perf_counter()
        approx, overfetch = search_index(
            store, "nearest_states_by_signature", RECALL_K, overfetch, **params["index"]
        )
        t2 = time.perf_counter()
        exact_ms.append((t1 - t0) * 1e3)
        index_ms.append((t2 - t1) * 1e3)
        if not exact:
            continue
        wanted = {row["measurement_id"] for row in exact}
        floor = exact[-1]["score"] - 1e-9
        hits = sum(1 for row in approx if row["measurement_id"] in wanted or row["score"] >= floor)
        recalls.append(min(hits, len(exact)) / len(exact))
    return {
        "recall_at_10": statistics.fmean(recalls) if recalls else math.nan,
        "recall_min": min(recalls) if recalls else math.nan,
        "recall_queries": len(recalls),
        "recall_fetch_k": min(RECALL_K * overfetch, MAX_FETCH_K),  # where the over-fetch ended
        "index_search_ms": percentiles(index_ms),
        "exact_search_ms": percentiles(exact_ms),
    }


def _warm_up(knowledge: Any, namespace: str, options: BenchOptions, console: Console) -> dict[str, Any]:
    """Ingest a small graph into its own namespace and retrieve from it: what the first retrievals of a fresh
    server cost (the read path's JIT warm-up), measured here so that the figures after ingestion are not."""
    measurements = min(WARMUP_MEASUREMENTS, options.measurements)
    retrievals = WARMUP_RETRIEVALS if not options.quick else options.query_count
    data = generate(BenchOptions(measurements=measurements, seed=options.seed + 11))
    knowledge.upsert_targets(namespace, list(TARGETS))
    t0 = time.perf_counter()
    with console.status(
        f"warming Neo4j's read path: {retrievals} retrievals on {measurements:,} measurements..."
    ):
        for start in range(0, len(data.attempts), options.batch_size):
            knowledge.record_attempts(namespace, data.attempts[start : start + options.batch_size])
        signatures = _query_signatures(random.Random(options.seed + 13), retrievals)
        first = percentiles(_retrieval_ms(knowledge, namespace, signatures)[:100])
    return {
        "namespace": namespace, "measurements": data.measurements, "retrievals": retrievals,
        "seconds": round(time.perf_counter() - t0, 1),
        "first_100_p50_ms": round(first["p50"], 3), "first_100_p95_ms": round(first["p95"], 3),
    }  # fmt: skip


def retrieve_request(index: int, signature: list[float | None]) -> RetrieveRequest:
    """The benchmark's `index`-th retrieval: its signature, on the targets taken in turn."""
    return RetrieveRequest(
        target=TARGETS[index % len(TARGETS)]["name"], signature=signature, k=RETRIEVE_K, limit=10
    )


def _retrieval_ms(knowledge: Any, namespace: str, signatures: Sequence[list[float | None]]) -> list[float]:
    """Milliseconds of one in-process retrieval per signature, in order."""
    latencies: list[float] = []
    for i, signature in enumerate(signatures):
        request = retrieve_request(i, signature)
        t0 = time.perf_counter()
        knowledge.retrieve([namespace], request)
        latencies.append((time.perf_counter() - t0) * 1e3)
    return latencies


def run_service_bench(
    settings: Settings, options: BenchOptions, console: Console | None = None
) -> dict[str, Any]:
    """Run the whole benchmark against the Neo4j of `settings`; returns the results object."""
    from kernelgraph.core.models import Role
    from kernelgraph.service import migrate
    from kernelgraph.service.auth import create_key
    from kernelgraph.service.knowledge import KnowledgeService
    from kernelgraph.service.retrieval import EXACT_SEARCH_MAX_STATES
    from kernelgraph.service.store import GraphStore, open_driver

    console = console or Console(stderr=True)
    started = time.perf_counter()
    namespace = f"bench-{uuid.uuid4().hex[:10]}"
    rng = random.Random(options.seed + 1)
    result: dict[str, Any] = {
        "benchmark": "service", "started_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "namespace": namespace, "quick": options.quick, **run_context(),
    }  # fmt: skip
    driver = open_driver(settings)
    try:
        store = GraphStore(driver, settings.neo4j_database)
        migrate.apply(store)
        knowledge = KnowledgeService(store)
        knowledge.upsert_targets(namespace, list(TARGETS))
        neo4j_pid = local_neo4j_pid(settings)
        if options.warm_up:
            result["warmup"] = _warm_up(knowledge, f"{namespace}-warmup", options, console)

        with progress_bar(console, remaining=False) as progress:
            task = progress.add_task("generating", total=options.measurements)
            data = generate(options, on_state=lambda done: progress.update(task, completed=done))
            progress.update(task, completed=data.measurements)
            batches = [
                data.attempts[i : i + options.batch_size]
                for i in range(0, len(data.attempts), options.batch_size)
            ]
            ingest = progress.add_task(f"ingesting ({options.threads} threads)", total=len(data.attempts))
            created = 0
            started_cpu = (time.process_time(), cpu_seconds(neo4j_pid, tree=True) if neo4j_pid else None)
            t0 = time.perf_counter()
            with ThreadPoolExecutor(max_workers=max(1, options.threads)) as pool:
                futures = [pool.submit(knowledge.record_attempts, namespace, batch) for batch in batches]
                for future in as_completed(futures):
                    results = future.result()
                    created += sum(1 for r in results if r.created)
                    progress.advance(ingest, len(results))
            ingest_s = time.perf_counter() - t0
            neo4j_after = cpu_seconds(neo4j_pid, tree=True) if neo4j_pid else None
            # CPU each side spent per attempt: what sizes a deployment (docs/scaling.md), unlike a rate
            # on a shared 2-core machine. The service's is this process (it hosts the service).
            ingest_cpu = {
                "service": round(time.process_time() - started_cpu[0], 2),
                "neo4j": round(neo4j_after - started_cpu[1], 2)
                if neo4j_after is not None and started_cpu[1] is not None else None,
            }  # fmt: skip
        result.update(
            measurements=data.measurements, attempts=len(data.attempts), attempts_created=created,
            states=data.states, tasks=data.tasks, targets=len(TARGETS), transforms=len(TRANSFORMS),
            patterns=len(PATTERNS), ingest_threads=options.threads, ingest_batch_size=options.batch_size,
            ingest_seconds=round(ingest_s, 3), ingest_attempts_per_s=round(len(data.attempts) / ingest_s, 1),
            ingest_measurements_per_s=round(data.measurements / ingest_s, 1),
            ingest_transactions=knowledge.writer.transactions, ingest_cpu_seconds=ingest_cpu,
            ingest_cpu_ms_per_attempt=cpu_ms_per(ingest_cpu, len(data.attempts)),
        )  # fmt: skip
        del data, batches

        states = store.read(
            "count_explored_states", namespaces=[namespace], limit=EXACT_SEARCH_MAX_STATES + 1
        )[0]["states"]
        result["retrieve_search"] = "exact" if states <= EXACT_SEARCH_MAX_STATES else "vector index"
        queries = options.query_count
        signatures = _query_signatures(rng, queries + 5)
        with console.status("retrieval, server side..."):
            server_ms = _retrieval_ms(knowledge, namespace, signatures)[5:]  # the first few plan the queries
        server = percentiles(server_ms)
        result.update(retrieve_p50_ms=round(server["p50"], 3), retrieve_p95_ms=round(server["p95"], 3),
                      retrieve_p99_ms=round(server["p99"], 3), retrieve_queries=len(server_ms),
                      retrieve_fetch_k=knowledge.retrieval.largest_fetch_k(RETRIEVE_K))  # fmt: skip

        result.update(_http_latency(settings, driver, store, namespace, signatures, console, create_key,
                                    Role.WRITER))  # fmt: skip
        result.update(
            _single_writes(settings, driver, store, namespace, options, console, create_key, Role.WRITER)
        )

        with console.status("recall@10: vector index against exact search..."):
            recall = recall_at_k(store, namespace, _query_signatures(rng, queries))
        recall["recall_at_10"] = round(recall["recall_at_10"], 4)
        result.update(recall)

        result["service_rss_mb"] = rss_mb()
        result["neo4j_rss_mb"] = process_tree_rss_mb(neo4j_pid) if neo4j_pid is not None else None
    finally:
        driver.close()
    result["duration_s"] = round(time.perf_counter() - started, 1)
    p95_goal = LARGE_RETRIEVE_P95_MS if result["measurements"] >= LARGE_GRAPH else GOALS["retrieve_p95_ms"]
    result["goals"] = {
        "ingest_attempts_per_s >= 5000": result["ingest_attempts_per_s"] >= GOALS["ingest_attempts_per_s"],
        f"retrieve_p95_ms <= {p95_goal:g}": result["retrieve_p95_ms"] <= p95_goal,
        "recall_at_10 >= 0.95": result["recall_at_10"] >= GOALS["recall_at_10"],
    }
    return result


def _http_latency(
    settings: Settings, driver: Any, store: Any, namespace: str, signatures: Sequence[list[float | None]],
    console: Console, create_key: Any, role: Any,
) -> dict[str, Any]:  # fmt: skip
    """POST /v1/retrieve latencies end to end; in-process timings instead when the API cannot start."""
    import httpx

    key = create_key(store, role, namespace, "service bench").key
    try:
        context = serve_http(settings, driver)
        url = context.__enter__()
    except Exception as exc:  # the API is optional here: say so, do not fail the benchmark
        log.warning("HTTP API unavailable (%s); end-to-end latency not measured", exc)
        return {"http_mode": f"not measured: API unavailable ({type(exc).__name__}: {exc})"}
    latencies: list[float] = []
    try:
        with httpx.Client(base_url=url, timeout=60, headers={"Authorization": f"Bearer {key}"}) as http, \
                console.status("retrieval over HTTP..."):  # fmt: skip
            for i, signature in enumerate(signatures):
                body = retrieve_request(i, signature).model_dump(mode="json", exclude_unset=True)
                t0 = time.perf_counter()
                response = http.post("/v1/retrieve", json=body)
                elapsed = (time.perf_counter() - t0) * 1e3
                response.raise_for_status()
                if i >= 5:
                    latencies.append(elapsed)
    finally:
        context.__exit__(None, None, None)
    over_http = percentiles(latencies)
    return {"http_mode": "uvicorn in-thread, keep-alive client", "http_retrieve_p50_ms": round(over_http["p50"], 3),
            "http_retrieve_p95_ms": round(over_http["p95"], 3), "http_retrieve_p99_ms": round(over_http["p99"], 3)}  # fmt: skip


SINGLE_WRITE_AGENTS = (1, 64)


def _post_one_by_one(
    url: str, key: str, attempts: list[dict[str, Any]], agents: int
) -> tuple[float, list[float], dict[int, int]]:
    """`agents` threads, each posting its share of `attempts` one per request; seconds, latencies, statuses."""
    import httpx

    latencies: list[float] = []
    statuses: dict[int, int] = {}
    lock = threading.Lock()

    def agent(mine: list[dict[str, Any]]) -> None:
        with httpx.Client(base_url=url, timeout=60, headers={"Authorization": f"Bearer {key}"}) as http:
            for body in mine:
                t0 = time.perf_counter()
                status = http.post("/v1/attempts", json=body).status_code
                elapsed = (time.perf_counter() - t0) * 1e3
                with lock:
                    latencies.append(elapsed)
                    statuses[status] = statuses.get(status, 0) + 1

    threads = [threading.Thread(target=agent, args=(attempts[i::agents],)) for i in range(agents)]
    t0 = time.perf_counter()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return time.perf_counter() - t0, latencies, statuses


def _single_writes(
    settings: Settings, driver: Any, store: Any, namespace: str, options: BenchOptions, console: Console,
    create_key: Any, role: Any,
) -> dict[str, Any]:  # fmt: skip
    """`POST /v1/attempts`, one attempt per request, from 1 and from 64 concurrent agents (threads, each
    with its own keep-alive connection): total attempts/s, latency and the status codes answered."""
    key = create_key(store, role, namespace, "service bench, single writes").key
    rng = random.Random(options.seed + 2)
    per_agent = 10 if options.quick else 40
    out: dict[str, Any] = {}
    with serve_http(settings, driver) as url, console.status("single writes over HTTP..."):
        for agents in SINGLE_WRITE_AGENTS:
            generated = generate(
                BenchOptions(measurements=agents * per_agent * 2, seed=rng.randrange(1 << 30))
            )
            attempts = generated.attempts[: agents * per_agent]
            for attempt in attempts:
                attempt["attempt_key"] = f"single-{agents}:{attempt['attempt_key']}"
            elapsed_s, latencies, statuses = _post_one_by_one(url, key, attempts, agents)
            stats = percentiles(latencies)
            out[f"single_writes_{agents}_agents"] = {
                "attempts": len(attempts), "attempts_per_s": round(len(attempts) / elapsed_s, 1),
                "p50_ms": round(stats["p50"], 2), "p95_ms": round(stats["p95"], 2), "p99_ms": round(stats["p99"], 2),
                "statuses": {str(k): v for k, v in sorted(statuses.items())},
            }  # fmt: skip
    return out


def render(result: dict[str, Any], console: Console) -> None:
    """The results as a table."""
    from rich.table import Table

    table = Table("metric", "value", title=f"Service benchmark, {result['measurements']:,} measurements")
    for key in ("attempts", "states", "ingest_seconds", "ingest_attempts_per_s", "retrieve_search",
                "retrieve_p50_ms", "retrieve_p95_ms", "retrieve_p99_ms", "retrieve_fetch_k", "http_mode",
                "http_retrieve_p50_ms", "http_retrieve_p95_ms", "http_retrieve_p99_ms", "recall_at_10",
                "recall_min", "recall_fetch_k", "service_rss_mb", "neo4j_rss_mb", "duration_s",
                "single_writes_1_agents", "single_writes_64_agents"):  # fmt: skip
        if key in result:
            value = result[key]
            table.add_row(key, f"{value:,.2f}" if isinstance(value, float) else str(value))
    console.print(table)
    for goal, met in result["goals"].items():
        console.print(f"{'[green]met[/]' if met else '[red]missed[/]'}  {goal}")


def main(
    measurements: int,
    *,
    as_json: bool,
    quick: bool,
    threads: int,
    results_dir: str | Path,
    cold: bool = False,
) -> int:
    """The `kernelgraph bench service` command: run, save, print; the exit code."""
    from kernelgraph.core import settings as settings_module
    from kernelgraph.core.errors import KernelGraphError

    err = Console(stderr=True)
    options = BenchOptions(measurements=measurements, quick=quick, threads=threads, warm_up=not cold)
    try:
        result = run_service_bench(settings_module.get_settings(), options, err)
    except KernelGraphError as exc:
        return report_error(err, exc)
    publish(
        result, results_dir, "service-bench", as_json=as_json, render=lambda console: render(result, console)
    )
    return 0
