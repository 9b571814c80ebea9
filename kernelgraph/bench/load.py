"""`kernelgraph bench load`: a team's day, with N agent processes on the HTTP service at once.

The benchmark starts the service (`kernelgraph serve` in its own process, no access log) on the Neo4j
of the settings (the local server is started if it is not running), makes a fresh namespace with one
writer key per agent, and runs phases of `seconds` each, every agent its own process
(kernelgraph/bench/load_agent.py, the loop's requests without the kernels):

- `write`: every agent records attempts one at a time, back to back (POST /v1/attempts);
- `loop`: every agent does what `optimize` does: per run one POST /v1/targets, then per step a
  POST /v1/retrieve and a POST /v1/attempts (retrieve:record 1:1, as in agent/loop.py).

Before the measured phases it runs the loop's mix for `WARMUP_SECONDS` in a namespace of its own
(not counted; reported under `warmup`): on a fresh server the JVM is still compiling Neo4j's paths,
which halved the first run's throughput (`--warmup-seconds 0` skips it).

It reports per phase: throughput (requests/s and recorded attempts/s), p50/p95/p99 per route,
answers by status (429 and 503 are retried by the agents as KernelGraphClient does; any other 5xx is
unexpected), the retrieve:record ratio reached, and the CPU seconds the service, Neo4j and the agents
each spent (on 2 cores, they share them). At the end it checks the graph: every acknowledged
attempt is stored, and how many stored attempts were never acknowledged. With `--profile`, py-spy
samples the service's Python (the thread holding the GIL) during each phase and the report names the
functions and packages where its time goes.

The service has no response cache: every retrieve runs its queries. It caches target rows for a few
seconds (a lookup each record and retrieve needs); each phase reports that cache's hit rate, read
from the service's /metrics before and after the phase.
Results go to `results/load-bench-<UTC time>.json` and `results/load-bench-latest.json`.
"""

from __future__ import annotations

import http.client
import json
import math
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from collections import Counter as Tally
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rich.console import Console
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

from kernelgraph.bench.reports import run_context
from kernelgraph.bench.service import cpu_ms_per, cpu_seconds, local_neo4j_pid
from kernelgraph.bench.stats import percentiles
from kernelgraph.core.settings import Settings

if TYPE_CHECKING:
    from kernelgraph.service.store import GraphStore

PHASES = ("write", "loop")
GOALS = {
    "write: recorded attempts/s >= 1000": ("write", "recorded_attempts_per_s", ">=", 1000.0),
    "write: record p95 <= 100 ms": ("write", "record_p95_ms", "<=", 100.0),
    "loop: record p95 <= 100 ms": ("loop", "record_p95_ms", "<=", 100.0),
    "loop: retrieve p95 <= 100 ms": ("loop", "retrieve_p95_ms", "<=", 100.0),
}
RECORD, RETRIEVE, TARGETS = "POST /v1/attempts", "POST /v1/retrieve", "POST /v1/targets"
# On a freshly started Neo4j, the first 64-agent run wrote at less than half the rate of the third:
# a minute or two of traffic before the JVM has compiled Neo4j's hot paths on 2 shared cores
# (docs/scaling.md, "A fresh server's first minutes").
WARMUP_SECONDS = 90.0
TARGET = {"name": "load-cpu", "kind": "cpu", "arch": "x86-64-v3", "peak_gflops": 150.0, "peak_gbps": 18.0,
          "cores": 2, "isa": "x86-64-v3"}  # fmt: skip
TASKS = ("matmul", "softmax", "rmsnorm", "layernorm", "conv2d", "stencil2d", "reduce-sum", "scan",
         "gather", "transpose", "gemv", "axpy")  # fmt: skip
PROFILE_GROUPS = (  # the first whose prefix starts the file of a sampled stack's innermost frame
    ("neo4j driver", ("neo4j/",)),
    ("pydantic (validation, serialization)", ("pydantic/", "pydantic_core/")),
    ("FastAPI / Starlette (routing, dependencies)", ("fastapi/", "starlette/", "anyio/")),
    (
        "uvicorn, h11, asyncio (HTTP, event loop)",
        ("uvicorn/", "h11/", "httptools/", "asyncio/", "selectors.py"),
    ),
    ("sockets", ("socket.py", "ssl.py")),
    ("json", ("json/",)),
    ("kernelgraph", ("kernelgraph/",)),
    ("prometheus_client", ("prometheus_client/",)),
    ("threads, locks, queues", ("threading.py", "concurrent/", "queue.py")),
)


@dataclass(frozen=True)
class LoadOptions:
    agents: int = 64
    seconds: float = 30.0
    phases: tuple[str, ...] = PHASES
    budget: int = 8  # steps per run, as `kernelgraph demo` runs the loop
    profile: bool = False
    keep: bool = False  # keep the namespace afterwards (default: delete it)
    seed: int = 11
    # Seconds of the loop's mix, in a namespace of its own, before the measured phases: a fresh
    # server's JVM has not compiled Neo4j's write and read paths yet (docs/scaling.md). 0: cold.
    warmup_seconds: float = WARMUP_SECONDS


def _free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def service_env(settings: Settings) -> dict[str, str]:
    """The environment that points `kernelgraph serve` at the same Neo4j with the same limits."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("KERNELGRAPH_")}
    env.update(
        KERNELGRAPH_NEO4J_URI=settings.effective_neo4j_uri, KERNELGRAPH_NEO4J_USER=settings.neo4j_user,
        KERNELGRAPH_NEO4J_PASSWORD=settings.effective_neo4j_password(),
        KERNELGRAPH_NEO4J_DATABASE=settings.neo4j_database, KERNELGRAPH_DATA_HOME=str(settings.data_home),
        KERNELGRAPH_RATE_LIMIT_PER_S=str(settings.rate_limit_per_s),
        KERNELGRAPH_RATE_LIMIT_BURST=str(settings.rate_limit_burst),
    )  # fmt: skip
    return env


SERVE = (sys.executable, "-c", "from kernelgraph.cli import main; main()", "serve", "--host", "127.0.0.1",
         "--no-access-log")  # fmt: skip


@contextmanager
def served(
    settings: Settings, workdir: Path, command: Sequence[str] = SERVE
) -> Iterator[tuple[int, subprocess.Popen[bytes]]]:
    """`kernelgraph serve` (or `command`, which takes `--port N`) in its own process on a free port,
    until the block ends; (port, process)."""
    port = _free_port()
    log_path = workdir / "service.log"
    with open(log_path, "wb") as log:
        process = subprocess.Popen(
            [*command, "--port", str(port)],
            env=service_env(settings), stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
        )  # fmt: skip
    try:
        deadline = time.monotonic() + 120
        while True:
            if process.poll() is not None:
                raise RuntimeError(
                    f"the service exited ({process.returncode}): {log_path.read_text()[-2000:]}"
                )
            try:
                conn = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
                conn.request("GET", "/v1/health")
                if conn.getresponse().status == 200:
                    break
            except OSError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError(f"the service did not answer /v1/health: {log_path.read_text()[-2000:]}")
            time.sleep(0.25)
        yield port, process
    finally:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def summarize_profile(raw: Path, top: int = 15) -> dict[str, Any]:
    """Self samples per function and per package group from py-spy's collapsed stacks ("a;b;c count")."""
    by_function: Tally[str] = Tally()
    by_group: Tally[str] = Tally()
    endpoints: Tally[str] = Tally()
    total = 0
    for line in raw.read_text(errors="replace").splitlines():
        stack, _, count_text = line.rpartition(" ")
        if not stack or not count_text.isdigit():
            continue
        count = int(count_text)
        frames = stack.split(";")
        total += count
        leaf = frames[-1]
        by_function[leaf] += count
        where = leaf[leaf.rfind("(") + 1 :]
        by_group[next((name for name, marks in PROFILE_GROUPS if where.startswith(marks)), "other")] += count
        for name in ("record_attempt ", "retrieve ", "upsert_targets "):
            if any(frame.startswith(name) and "routes" in frame for frame in frames):
                endpoints[name.strip()] += count
    share = (lambda n: round(n / total, 4)) if total else (lambda n: 0.0)
    return {
        "samples": total,
        "by_package": {name: share(n) for name, n in by_group.most_common()},
        "inside_endpoint": {name: share(n) for name, n in endpoints.most_common()},
        "top_functions": [{"function": name, "share": share(n)} for name, n in by_function.most_common(top)],
    }


def scrape(port: int) -> dict[str, float]:
    """The service's /metrics samples without labels (e.g. the target cache's hits and misses)."""
    try:
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        conn.request("GET", "/metrics")
        text = conn.getresponse().read().decode()
    except OSError:
        return {}
    samples: dict[str, float] = {}
    for line in text.splitlines():
        name, _, value = line.partition(" ")
        if line and not line.startswith("#") and "{" not in name:
            try:
                samples[name] = float(value)
            except ValueError:
                continue
    return samples


def cache_report(before: dict[str, float], after: dict[str, float]) -> dict[str, Any]:
    """Hits, misses and hit rate of the service's target cache over a phase (None: not exposed)."""
    keys = ("kernelgraph_target_cache_hits_total", "kernelgraph_target_cache_misses_total")
    if not all(k in before and k in after for k in keys):
        return {"target_cache": None}
    hits, misses = (after[k] - before[k] for k in keys)
    return {"target_cache_hits": int(hits), "target_cache_misses": int(misses),
            "target_cache_hit_rate": round(hits / (hits + misses), 4) if hits + misses else None}  # fmt: skip


def group_commit_report(before: dict[str, float], after: dict[str, float]) -> dict[str, Any] | None:
    """Transactions the group-commit writer committed over a phase and the record requests they held."""
    keys = ("kernelgraph_group_commit_transactions_total", "kernelgraph_group_commit_requests_total")
    if not all(k in before and k in after for k in keys):
        return None
    transactions, requests = (int(after[k] - before[k]) for k in keys)
    return {"transactions": transactions, "requests": requests,
            "requests_per_transaction": round(requests / transactions, 2) if transactions else None}  # fmt: skip


def _py_spy() -> str | None:
    beside = Path(sys.executable).with_name("py-spy")
    return str(beside) if beside.exists() else shutil.which("py-spy")


def run_phase(
    phase: str, port: int, keys: Sequence[str], options: LoadOptions, workdir: Path, service_pid: int,
    neo4j_pid: int | None, progress: Progress,
) -> dict[str, Any]:  # fmt: skip
    """Start the agents, let them run `seconds`, collect what each measured."""
    phase_dir = workdir / phase
    phase_dir.mkdir()
    go = phase_dir / "go.json"
    processes: list[subprocess.Popen[bytes]] = []
    starting = progress.add_task(f"{phase}: starting {options.agents} agents", total=options.agents)
    for index, key in enumerate(keys):
        config = {
            "host": "127.0.0.1", "port": port, "key": key, "agent": f"load-agent-{index}", "phase": phase,
            "seconds": options.seconds, "budget": options.budget, "seed": options.seed * 1000 + index,
            "task": TASKS[index % len(TASKS)], "target": TARGET["name"], "target_body": TARGET,
            "run_prefix": f"load-{phase}-a{index}", "ready": str(phase_dir / f"ready-{index}"), "go": str(go),
            "out": str(phase_dir / f"agent-{index}.json"),
        }  # fmt: skip
        path = phase_dir / f"config-{index}.json"
        path.write_text(json.dumps(config))
        processes.append(subprocess.Popen([sys.executable, "-m", "kernelgraph.bench.load_agent", str(path)],
                                          stdin=subprocess.DEVNULL))  # fmt: skip
    deadline = time.monotonic() + 120
    while (ready := sum(1 for i in range(len(keys)) if (phase_dir / f"ready-{i}").exists())) < len(keys):
        progress.update(starting, completed=ready)
        if time.monotonic() > deadline or any(p.poll() not in (None, 0) for p in processes):
            for p in processes:
                p.kill()
            raise RuntimeError(f"{phase}: only {ready} of {len(keys)} agents started")
        time.sleep(0.1)
    progress.update(starting, completed=len(keys))
    start_at = time.time() + 1.0
    tmp = phase_dir / "go.tmp"
    tmp.write_text(json.dumps({"start_at": start_at}))
    tmp.rename(go)  # atomic: an agent never reads half a file
    time.sleep(max(0.0, start_at - time.time()))
    metrics_before = scrape(port)
    cpu_before = (cpu_seconds(service_pid), cpu_seconds(neo4j_pid, tree=True) if neo4j_pid else None)
    profiler = None
    raw_profile = phase_dir / "profile.txt"
    if options.profile and (spy := _py_spy()):
        profiler = subprocess.Popen([spy, "record", "--pid", str(service_pid), "--duration", str(int(options.seconds)),
                                     "--rate", "50", "--gil", "--nonblocking", "--format", "raw", "--output",
                                     str(raw_profile)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # fmt: skip
    running = progress.add_task(f"{phase}: {options.agents} agents", total=options.seconds)
    while time.time() < start_at + options.seconds:
        progress.update(running, completed=min(options.seconds, time.time() - start_at))
        time.sleep(0.25)
    cpu_after = (cpu_seconds(service_pid), cpu_seconds(neo4j_pid, tree=True) if neo4j_pid else None)
    progress.update(running, completed=options.seconds)
    for p in processes:
        try:
            p.wait(timeout=options.seconds + 180)
        except subprocess.TimeoutExpired:
            p.kill()
    if profiler is not None:
        profiler.wait(timeout=60)
    agents = []
    for index in range(len(keys)):
        out = phase_dir / f"agent-{index}.json"
        if out.exists():
            agents.append(json.loads(out.read_text()))
    result = summarize_phase(phase, agents, options, start_at)
    metrics_after = scrape(port)
    result["caches"] = cache_report(metrics_before, metrics_after)
    result["group_commit"] = group_commit_report(metrics_before, metrics_after)
    result["cpu_seconds"] = {
        "service": _delta(cpu_before[0], cpu_after[0]), "neo4j": _delta(cpu_before[1], cpu_after[1]),
        "agents": round(sum(a["cpu_s"] for a in agents), 2), "available": round((os.cpu_count() or 1) * options.seconds, 1),
    }  # fmt: skip
    if options.profile:
        result["profile"] = (summarize_profile(raw_profile) if raw_profile.exists()
                             else "not taken: py-spy is not installed (pip install py-spy)")  # fmt: skip
    result["acknowledged_keys"] = [key for a in agents for key in a["acknowledged"]]
    return result


def warm_up(
    port: int, keys: Sequence[str], options: LoadOptions, workdir: Path, service_pid: int,
    neo4j_pid: int | None, progress: Progress,
) -> dict[str, Any]:  # fmt: skip
    """The loop's mix for `warmup_seconds`, not counted: what a fresh server's first traffic got."""
    warm_dir = workdir / "warmup"
    warm_dir.mkdir()
    # Its own seed: the measured loop phase must not send the very requests the warm-up sent.
    warm = replace(options, seconds=options.warmup_seconds, profile=False, seed=options.seed + 1)
    phase = run_phase("loop", port, keys, warm, warm_dir, service_pid, neo4j_pid, progress)
    return {
        "seconds": options.warmup_seconds, "requests": phase["requests"],
        "recorded_attempts_per_s": phase["recorded_attempts_per_s"], "record_p95_ms": phase["record_p95_ms"],
        "retrieve_p95_ms": phase["retrieve_p95_ms"], "unexpected_5xx": phase["unexpected_5xx"],
        "cpu_ms_per_request": cpu_ms_per(phase["cpu_seconds"], phase["requests"], ("service", "neo4j")),
    }  # fmt: skip


def _delta(before: float | None, after: float | None) -> float | None:
    return round(after - before, 2) if before is not None and after is not None else None


def summarize_phase(
    phase: str, agents: Sequence[dict[str, Any]], options: LoadOptions, start_at: float
) -> dict[str, Any]:
    """Throughput, latency per route, answers by status and the retrieve:record ratio of one phase."""
    latencies: dict[str, list[float]] = {}
    statuses: dict[str, Tally[str]] = {}
    for agent in agents:
        for route, values in agent["latency_ms"].items():
            latencies.setdefault(route, []).extend(values)
        for route, counts in agent["statuses"].items():
            statuses.setdefault(route, Tally()).update(counts)
    ended = max(
        (a["last_response_at"] for a in agents if a["last_response_at"]), default=start_at + options.seconds
    )
    duration = max(ended - start_at, 1e-9)
    acknowledged = sum(len(a["acknowledged"]) for a in agents)
    retrieves = sum(a["retrieves_ok"] for a in agents)
    everything: Tally[str] = Tally()
    for counts in statuses.values():
        everything.update(counts)
    routes = {}
    for route in sorted(latencies):
        p = percentiles(latencies[route])
        routes[route] = {"requests": len(latencies[route]), "p50_ms": round(p["p50"], 2), "p95_ms": round(p["p95"], 2),
                         "p99_ms": round(p["p99"], 2), "statuses": dict(sorted(statuses.get(route, Tally()).items()))}  # fmt: skip
    requests = sum(len(v) for v in latencies.values())
    record = routes.get(RECORD, {})
    retrieve = routes.get(RETRIEVE, {})
    return {
        "agents": len(agents), "agents_expected": options.agents, "duration_s": round(duration, 2),
        # Rates divide by duration_s, which runs to the last answer: a straggler shows here, not hidden.
        "last_answer_after_phase_end_s": round(ended - start_at - options.seconds, 2),
        "requests": requests, "requests_per_s": round(requests / duration, 1),
        "recorded_attempts": acknowledged, "recorded_attempts_per_s": round(acknowledged / duration, 1),
        "created": sum(a["created"] for a in agents),
        "record_p95_ms": record.get("p95_ms", math.nan), "retrieve_p95_ms": retrieve.get("p95_ms", math.nan),
        "routes": routes, "statuses": dict(sorted(everything.items())),
        "unexpected_5xx": sum(n for code, n in everything.items() if code.startswith("5") and code != "503"),
        "rate_limited_429": everything.get("429", 0), "unavailable_503": everything.get("503", 0),
        "transport_errors": sum(a["transport_errors"] for a in agents),
        "transport_failures": [  # the first 20, each with when it happened in the phase
            {**{k: v for k, v in f.items() if k != "at"}, "at_s": round(f["at"] - start_at, 2)}
            for a in agents for f in a.get("transport_failures", [])
        ][:20],
        "retries": sum(a["retries"] for a in agents),
        "gave_up": sum(a["gave_up"] for a in agents),
        "retrieve_record_ratio": round(retrieves / acknowledged, 3) if acknowledged else None,
        "loop_retrieve_record_ratio": 1.0 if phase == "loop" else 0.0,
        "mean_neighbours_per_retrieve": round(sum(a["neighbours"] for a in agents) / retrieves, 1) if retrieves else None,
    }  # fmt: skip


@dataclass(frozen=True)
class Prepared:
    """What `prepared` set up: the store (its driver open until the block ends), one writer key per
    agent label in each namespace, and whether the local Neo4j had to be started."""

    store: GraphStore
    keys: dict[str, list[str]]  # namespace -> one writer key per label, in order
    neo4j_started: bool


@contextmanager
def prepared(settings: Settings, agents: Mapping[str, Sequence[str]], console: Console) -> Iterator[Prepared]:
    """The service side of a run with agent processes, before `served` starts the service: the Neo4j
    of the settings running (the local server is started if it is not), the schema applied, and a
    writer key for each agent label in each namespace of `agents` (namespace -> labels).

    `kernelgraph bench load` and `kernelgraph demo --agents` both start their agents this way."""
    from kernelgraph.core.models import Role
    from kernelgraph.service import migrate
    from kernelgraph.service.auth import create_key
    from kernelgraph.service.neo4j_local import LocalNeo4j
    from kernelgraph.service.store import GraphStore, open_driver

    started = False
    if settings.uses_local_server and not LocalNeo4j(settings).status().running:
        with console.status("starting the local Neo4j..."):
            LocalNeo4j(settings).start()
        started = True
    driver = open_driver(settings)
    try:
        store = GraphStore(driver, settings.neo4j_database)
        migrate.apply(store)
        keys = {
            namespace: [create_key(store, Role.WRITER, namespace, label).key for label in labels]
            for namespace, labels in agents.items()
        }
        yield Prepared(store, keys, started)
    finally:
        driver.close()


def run_load_bench(
    settings: Settings, options: LoadOptions, console: Console | None = None
) -> dict[str, Any]:
    """Run the whole benchmark; returns the results object."""
    from kernelgraph.service import namespaces
    from kernelgraph.service.knowledge import KnowledgeService

    console = console or Console(stderr=True)
    started = time.perf_counter()
    namespace = f"load-{uuid.uuid4().hex[:10]}"
    result: dict[str, Any] = {
        "benchmark": "load", "started_at": datetime.now(UTC).isoformat(timespec="seconds"),
        **run_context(), "agents": options.agents, "seconds": options.seconds,
        "budget": options.budget, "namespace": namespace, "rate_limit_per_s": settings.rate_limit_per_s,
        "rate_limit_burst": settings.rate_limit_burst, "target": TARGET["name"],
        "cache": "no response cache: every retrieve and record runs its queries; the service caches target "
        "rows for 5 s (each phase's `caches` gives that cache's hit rate, from /metrics)",
        "phases": {},
    }  # fmt: skip
    workdir = Path(tempfile.mkdtemp(prefix="kernelgraph-load-"))
    warmup_namespace = f"{namespace}-warmup"
    labels = {namespace: [f"load agent {i}" for i in range(options.agents)]}
    if options.warmup_seconds > 0:
        labels[warmup_namespace] = [f"warm-up agent {i}" for i in range(options.agents)]
    try:
        with prepared(settings, labels, console) as ready:
            if ready.neo4j_started:
                result["neo4j_started_by_bench"] = True
            store, keys = ready.store, ready.keys[namespace]
            # The write phase records on the target at once.
            KnowledgeService(store).upsert_targets(namespace, [TARGET])
            acknowledged: list[str] = []
            with served(settings, workdir) as (port, process), Progress(
                TextColumn("{task.description}"), BarColumn(), TimeElapsedColumn(), console=console
            ) as progress:  # fmt: skip
                neo4j_pid = local_neo4j_pid(settings)
                if options.warmup_seconds > 0:
                    result["warmup"] = warm_up(
                        port, ready.keys[warmup_namespace], options, workdir, process.pid, neo4j_pid, progress
                    )
                    result["warmup"]["namespace"] = warmup_namespace
                for phase in options.phases:
                    outcome = run_phase(phase, port, keys, options, workdir, process.pid, neo4j_pid, progress)
                    acknowledged.extend(outcome.pop("acknowledged_keys"))
                    result["phases"][phase] = outcome
            distinct = sorted(set(acknowledged))
            stored_acknowledged = sum(
                len(store.read("attempts_existing", namespace=namespace, attempt_keys=distinct[i : i + 10_000]))
                for i in range(0, len(distinct), 10_000)
            )  # fmt: skip
            stored = namespaces.contents(store, namespace).nodes.get("Attempt", 0)
            result.update(
                acknowledged=len(distinct), acknowledged_stored=stored_acknowledged, stored=stored,
                acknowledged_missing=len(distinct) - stored_acknowledged, stored_unacknowledged=stored - stored_acknowledged,
            )  # fmt: skip
            if not options.keep:
                with console.status(f"deleting namespace {namespace}..."):
                    namespaces.delete(store, namespace)
                    if options.warmup_seconds > 0:
                        namespaces.delete(store, warmup_namespace)
                result["namespace_deleted"] = True
    finally:
        if not os.environ.get("KERNELGRAPH_LOAD_KEEP_WORKDIR"):  # agents' raw files, for debugging
            shutil.rmtree(workdir, ignore_errors=True)
    result["duration_s"] = round(time.perf_counter() - started, 1)
    result["goals"] = goals(result)
    return result


def goals(result: dict[str, Any]) -> dict[str, bool | None]:
    """Each goal of issue 13 item 4: met, missed, or None when its phase did not run."""
    met: dict[str, bool | None] = {}
    for name, (phase, key, op, bound) in GOALS.items():
        value = result["phases"].get(phase, {}).get(key)
        met[name] = None if value is None or (isinstance(value, float) and math.isnan(value)) else (
            value >= bound if op == ">=" else value <= bound)  # fmt: skip
    met["0 unexpected 5xx"] = all(p["unexpected_5xx"] == 0 for p in result["phases"].values())
    met["acknowledged == stored"] = (
        result.get("acknowledged_missing") == 0 and result.get("stored_unacknowledged") == 0
    )
    return met


def render(result: dict[str, Any], console: Console) -> None:
    from rich.table import Table

    warm = result.get("warmup")
    if warm:
        console.print(f"warm-up (not counted): {warm['seconds']:g} s of the loop's mix, {warm['recorded_attempts_per_s']:,} "
                      f"recorded attempts/s, record p95 {warm['record_p95_ms']:.0f} ms, retrieve p95 "
                      f"{warm['retrieve_p95_ms']:.0f} ms", highlight=False)  # fmt: skip
    else:
        console.print(
            "no warm-up (--warmup-seconds 0): the first phase may measure a fresh server's compiling"
        )
    for phase, data in result["phases"].items():
        table = Table("route", "requests", "p50 ms", "p95 ms", "p99 ms", "statuses",
                      title=f"{phase}: {data['agents']} agents, {data['duration_s']} s, "
                            f"{data['recorded_attempts_per_s']:,} recorded attempts/s, {data['requests_per_s']:,} requests/s")  # fmt: skip
        for route, row in data["routes"].items():
            table.add_row(route, f"{row['requests']:,}", f"{row['p50_ms']:.1f}", f"{row['p95_ms']:.1f}",
                          f"{row['p99_ms']:.1f}", " ".join(f"{k}:{v}" for k, v in row["statuses"].items()))  # fmt: skip
        console.print(table)
        cpu = data["cpu_seconds"]
        console.print(f"  retrieve:record {data['retrieve_record_ratio']} (the loop's: {data['loop_retrieve_record_ratio']}), "
                      f"unexpected 5xx {data['unexpected_5xx']}, 503 {data['unavailable_503']}, 429 {data['rate_limited_429']}, "
                      f"transport errors {data['transport_errors']}, gave up {data['gave_up']}; CPU s: service {cpu['service']}, "
                      f"Neo4j {cpu['neo4j']}, agents {cpu['agents']} of {cpu['available']}", highlight=False)  # fmt: skip
        caches = data.get("caches", {})
        if caches.get("target_cache_hit_rate") is not None:
            console.print(f"  target cache: {caches['target_cache_hits']:,} hits, {caches['target_cache_misses']:,} misses "
                          f"(hit rate {caches['target_cache_hit_rate']:.1%})", highlight=False)  # fmt: skip
        profile = data.get("profile")
        if isinstance(profile, dict) and profile["samples"]:
            console.print("  service profile (GIL holder): " + ", ".join(
                f"{name} {share:.0%}" for name, share in list(profile["by_package"].items())[:6]), highlight=False)  # fmt: skip
    console.print(f"acknowledged {result['acknowledged']:,}, stored {result['stored']:,}, acknowledged but missing "
                  f"{result['acknowledged_missing']}, stored but unacknowledged {result['stored_unacknowledged']}")  # fmt: skip
    for goal, met in result["goals"].items():
        console.print(
            f"{'[green]met[/]' if met else ('[dim]not run[/]' if met is None else '[red]missed[/]')}  {goal}"
        )


def main(options: LoadOptions, *, as_json: bool, results_dir: str | Path) -> int:
    """The `kernelgraph bench load` command: run, save, print; the exit code."""
    from kernelgraph.bench.reports import publish, report_error
    from kernelgraph.core import settings as settings_module
    from kernelgraph.core.errors import KernelGraphError

    err = Console(stderr=True)
    try:
        result = run_load_bench(settings_module.get_settings(), options, err)
    except (KernelGraphError, RuntimeError) as exc:
        return report_error(err, exc)
    publish(
        result, results_dir, "load-bench", as_json=as_json, render=lambda console: render(result, console)
    )
    return 0
