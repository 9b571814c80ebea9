"""The floor under `kernelgraph bench load`'s write phase: the same agents against the service with
its database write taken out.

    python -m kernelgraph.bench.http_floor [--agents 64] [--seconds 20] [--warmup-seconds 90] [--results-dir results]

A diagnostic, not a product path. It serves the product's own app (`create_app`: authentication,
rate limiting, metrics, validation, the thread pool that a sync route runs in) in a process of its
own, as `kernelgraph serve` does, except that `KnowledgeService.record_attempts` answers without
writing: it keeps the target lookup (from the service's cache) and returns made-up ids. The agents
are bench load's write-phase agents, one writer key each. First the real service gets bench load's
warm-up (`WARMUP_SECONDS`, not counted), so that a fresh Neo4j is not still compiling; then runs
alternate, floor / service / service / floor, on the same Neo4j, so that the machine's state
favours neither; each is one write phase.

No write path can serve more than the floor, so it bounds the goal of 1,000 single writes a second
with p95 <= 100 ms on this machine. Saves results/http-floor-<UTC time>.json.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
import tempfile
import uuid
from collections.abc import Sequence
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

from kernelgraph.bench.load import (
    SERVE,
    TARGET,
    LoadOptions,
    prepared,
    run_phase,
    served,
    warm_up,
)
from kernelgraph.bench.reports import run_context, save_report
from kernelgraph.bench.service import cpu_ms_per, local_neo4j_pid
from kernelgraph.core.models import AttemptRecord, RecordResult
from kernelgraph.core.settings import get_settings
from kernelgraph.service import namespaces
from kernelgraph.service.knowledge import KnowledgeService
from kernelgraph.service.recorder import SERVICE, Recorder

ORDER = ("floor", "service", "service", "floor")
FLOOR_SERVE = (sys.executable, "-m", "kernelgraph.bench.http_floor", "--serve")


def _made_up_id(text: str) -> str:
    """A measurement id of the service's format (32 hex digits), which the agents send back as parents."""
    return hashlib.sha256(text.encode()).hexdigest()[:32]


def record_without_writing(
    self: KnowledgeService, namespace: str, models: Sequence[AttemptRecord], recorder: Recorder = SERVICE
) -> list[RecordResult]:
    """What the route gets back from record_attempts, without the write (the route's body is a model;
    `recorder`, the key the route records for, is taken like the real method's and not used)."""
    self.targets([namespace], [m.target for m in models])
    return [
        RecordResult(
            attempt_key=m.attempt_key,
            created=True,
            parent_kernel_id=m.parent.kernel_id if m.parent is not None else "by-reference",
            child_kernel_id=m.child.kernel_id,
            parent_measurement_id=m.parent_measurement_id or _made_up_id(f"{m.attempt_key}:parent"),
            child_measurement_id=_made_up_id(f"{m.attempt_key}:child") if m.child_measurement else None,
        )
        for m in models
    ]


def serve_floor(port: int) -> None:
    """`kernelgraph serve --no-access-log`, with record_attempts replaced by record_without_writing."""
    import uvicorn

    from kernelgraph.service.api.app import create_app

    KnowledgeService.record_attempts = record_without_writing  # type: ignore[method-assign, assignment]
    settings = get_settings()
    uvicorn.run(create_app(settings), host="127.0.0.1", port=port, log_level="info", access_log=False)


def main(
    agents: int,
    seconds: float,
    results_dir: Path,
    order: Sequence[str] = ORDER,
    warmup_seconds: float | None = None,
) -> dict[str, Any]:
    settings = get_settings()
    console = Console(stderr=True)
    options = LoadOptions(agents=agents, seconds=seconds, phases=("write",))
    if warmup_seconds is not None:
        options = replace(options, warmup_seconds=warmup_seconds)
    kinds = {*order, "warmup"} if options.warmup_seconds > 0 else set(order)
    spaces = {kind: f"http-floor-{kind}-{uuid.uuid4().hex[:8]}" for kind in kinds}
    labels = {namespace: [f"floor agent {i}" for i in range(agents)] for namespace in spaces.values()}
    result: dict[str, Any] = {
        "benchmark": "http-floor", "started_at": datetime.now(UTC).isoformat(timespec="seconds"),
        **run_context(), "agents": agents, "seconds": seconds, "order": list(order), "runs": [],
    }  # fmt: skip
    with prepared(settings, labels, console) as ready, tempfile.TemporaryDirectory() as tmp:
        knowledge = KnowledgeService(ready.store)
        for namespace in spaces.values():
            knowledge.upsert_targets(namespace, [TARGET])
        neo4j_pid = local_neo4j_pid(settings)
        try:
            if options.warmup_seconds > 0:
                with served(settings, Path(tmp), SERVE) as (port, process), Progress(
                    TextColumn("warm-up {task.description}"), BarColumn(), TimeElapsedColumn(), console=console
                ) as progress:  # fmt: skip
                    keys = ready.keys[spaces["warmup"]]
                    result["warmup"] = warm_up(
                        port, keys, options, Path(tmp), process.pid, neo4j_pid, progress
                    )
            for index, kind in enumerate(order):
                workdir = Path(tmp) / f"{index}-{kind}"
                workdir.mkdir()
                keys = ready.keys[spaces[kind]]
                command = FLOOR_SERVE if kind == "floor" else SERVE
                # Each run its own agents' seed: replayed attempt keys would be answered 200, not written.
                run_options = replace(options, seed=options.seed + index)
                with served(settings, workdir, command) as (port, process), Progress(
                    TextColumn(f"{kind} {{task.description}}"), BarColumn(), TimeElapsedColumn(), console=console
                ) as progress:  # fmt: skip
                    phase = run_phase(
                        "write", port, keys, run_options, workdir, process.pid, neo4j_pid, progress
                    )
                acknowledged = phase.pop("acknowledged_keys")
                result["runs"].append({
                    "kind": kind, "acknowledged": len(acknowledged),
                    **{k: phase[k] for k in ("requests_per_s", "recorded_attempts_per_s", "statuses", "unexpected_5xx")},
                    "record": phase["routes"].get("POST /v1/attempts"), "cpu_seconds": phase["cpu_seconds"],
                    "cpu_ms_per_request": cpu_ms_per(phase["cpu_seconds"], phase["requests"]),
                })  # fmt: skip
                run = result["runs"][-1]
                console.print(
                    f"{kind:8s} {run['recorded_attempts_per_s']:7.1f} attempts/s, record p95 "
                    f"{(run['record'] or {}).get('p95_ms', float('nan')):7.1f} ms, CPU ms per request {run['cpu_ms_per_request']}"
                )
            result["stored"] = {
                kind: namespaces.contents(ready.store, spaces[kind]).nodes.get("Attempt", 0)
                for kind in set(order)
            }
        finally:
            for namespace in spaces.values():
                namespaces.delete(ready.store, namespace)
    for kind in set(order):
        runs = [r for r in result["runs"] if r["kind"] == kind]
        p95s = [r["record"]["p95_ms"] for r in runs if r["record"]]
        result.setdefault("mean", {})[kind] = {
            "recorded_attempts_per_s": round(sum(r["recorded_attempts_per_s"] for r in runs) / len(runs), 1),
            "record_p95_ms": round(sum(p95s) / len(p95s), 1) if p95s else None,
        }
    save_report(result, results_dir, "http-floor")
    return result


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--agents", type=int, default=64)
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument(
        "--warmup-seconds", type=float, help="bench load's warm-up first (default: WARMUP_SECONDS)"
    )
    parser.add_argument("--results-dir", type=Path, default=Path("results"))
    parser.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)  # the floor's server process
    parser.add_argument("--port", type=int, help=argparse.SUPPRESS)
    options = parser.parse_args()
    if options.serve:
        serve_floor(options.port)
    else:
        report = main(
            options.agents, options.seconds, options.results_dir, warmup_seconds=options.warmup_seconds
        )
        print(json.dumps(report, indent=1))
