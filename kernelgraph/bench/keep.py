"""`kernelgraph bench keep`: how often noise fools the keep decision (`agent.loop.keep_decision`).

Four cells, `decisions` each, on rmsnorm at a small instance with the loop's quick timing plan
(`FAST_TIMING`), each decision a fresh profile (and its re-measurements) through the isolated protocol:
- false keeps: a kernel against itself (a keep is false);
- false discards: a kernel against the same kernel doing 30% more rows again (the candidate is
  about 1.3x faster; a discard is false; the measured ratio is reported);
each on the machine as it is ("quiet": whatever else runs, its load recorded) and with this bench
burning a core in another process ("loaded"; since evaluator 8 a comparison is made only on free
cores, so every loaded decision is "not judged" and counted under `failed`: the cell shows that rule,
not a keep rate under load); `conditions` picks which. The two kernel pairs alternate,
decision by decision. A profile that fails (the protocol could not run the kernel) is counted as the
loop would decide it, not kept, and counted apart (`failed`) with its reasons: a bench that stopped on
the first one would hide how often a loaded machine makes the evaluator fail an honest kernel.
Results land in results/keep-bench-<time>.json.
"""

from __future__ import annotations

import math
import os
import platform
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from rich.progress import Progress

from kernelgraph.agent.backends.c import CBackend
from kernelgraph.agent.backends.timing import FAST_TIMING
from kernelgraph.agent.loop import DEFAULT_KEEP_THRESHOLD, KEEP_CONFIDENCE, MAX_MEASUREMENTS, keep_decision
from kernelgraph.agent.results import Outcome
from kernelgraph.agent.targets import get_target
from kernelgraph.agent.tasks import get_task

INSTANCE = "512x2048"  # ~ms calls: the round trip to the child is a small share of each
_RMSNORM = """#include <math.h>
static void rms(const float* x, const float* w, float* y, int c, int from, int to) {
    for (int i = from; i < to; i++) {
        float q = 0.0f;
        for (int j = 0; j < c; j++) q += x[(long)i * c + j] * x[(long)i * c + j];
        float inv = 1.0f / sqrtf(q / c + 1e-6f);
        for (int j = 0; j < c; j++) y[(long)i * c + j] = x[(long)i * c + j] * inv * w[j];
    }
}
void kernel(const float* x, const float* w, float* y, int r, int c) {
    rms(x, w, y, c, 0, r);
    rms(x, w, y, c, 0, (int)(r * EXTRA));
}
"""
FAST = _RMSNORM.replace("EXTRA", "0.0")
SLOW = _RMSNORM.replace("EXTRA", "0.3")  # the same rows again: ~1.3x the work, same outputs


@contextmanager
def _burning(on: bool) -> Iterator[None]:
    """Another process spinning on a core for the duration (ended by its pid)."""
    if not on:
        yield
        return
    burner = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        yield
    finally:
        burner.kill()
        burner.wait()


CONDITIONS = ("quiet", "loaded")


def run_keep_bench(
    decisions: int, target_name: str = "cpu-x86-64-v2", conditions: tuple[str, ...] = CONDITIONS
) -> dict[str, Any]:
    unknown = [c for c in conditions if c not in CONDITIONS]
    if unknown or not conditions:
        raise ValueError(f"conditions: {unknown or 'none'} not among {', '.join(CONDITIONS)}")
    task, target = get_task("rmsnorm").at(INSTANCE), get_target(target_name)
    pairs = {"same": (FAST, FAST), "faster": (FAST, SLOW)}
    cells: dict[str, dict[str, Any]] = {}
    with tempfile.TemporaryDirectory(prefix="kg-keep-bench-") as cache, Progress() as progress:
        backend = CBackend(cache_dir=Path(cache), counters=False, timing=FAST_TIMING)
        for source in (FAST, SLOW):
            if not backend.check(task, source, target).correct:
                raise RuntimeError("a bench kernel is not correct")
        for load in conditions:
            rows: dict[str, list[dict[str, float]]] = {"same": [], "faster": []}
            failures: dict[str, list[str]] = {"same": [], "faster": []}
            bar = progress.add_task(f"keep decisions, {load}", total=2 * decisions)
            loads = [os.getloadavg()[0]]
            with _burning(load == "loaded"):
                for i in range(2 * decisions):
                    kind = ("same", "faster")[i % 2]
                    candidate, parent = pairs[kind]
                    first = backend.profile(task, candidate, target, parent_source=parent)
                    if first.outcome != Outcome.KEPT:  # the loop would not keep it: a decision all the same
                        failures[kind].append(first.reason)
                        rows[kind].append({"keep": 0.0, "speedup": math.nan, "low": math.nan,
                                           "measurements": 1.0})  # fmt: skip
                        progress.advance(bar)
                        continue

                    def again(c: str = candidate, p: str = parent) -> Any:
                        redo = backend.profile(task, c, target, parent_source=p)
                        return redo if redo.outcome == Outcome.KEPT else None

                    d = keep_decision(first, again, DEFAULT_KEEP_THRESHOLD)
                    rows[kind].append({"keep": float(d.keep), "speedup": d.speedup, "low": d.low,
                                       "measurements": float(d.measurements)})  # fmt: skip
                    if i % 20 == 0:
                        loads.append(os.getloadavg()[0])
                    progress.advance(bar)
            loads.append(os.getloadavg()[0])
            for kind, got in rows.items():
                keeps = sum(r["keep"] for r in got)
                cells[f"{kind}/{load}"] = {
                    "decisions": len(got),
                    "keeps": keeps,
                    "false_rate": (keeps if kind == "same" else len(got) - keeps) / len(got),
                    "false_kind": "keep" if kind == "same" else "discard",
                    "failed": len(failures[kind]),
                    "failure_reasons": sorted(set(failures[kind]))[:5],
                    "median_speedup": statistics.median(
                        [r["speedup"] for r in got if not math.isnan(r["speedup"])] or [math.nan]
                    ),
                    "mean_measurements": statistics.fmean(r["measurements"] for r in got),
                    "load_average_1m": {
                        "min": min(loads),
                        "median": statistics.median(loads),
                        "max": max(loads),
                    },
                }
    return {
        "bench": "keep",
        "taken_at": datetime.now(UTC).isoformat(),
        "host": platform.node(),
        "cpus": os.cpu_count(),
        "task": f"rmsnorm@{INSTANCE}",
        "target": target.name,
        "timing_plan": {
            "warmup": FAST_TIMING.warmup,
            "min_trials": FAST_TIMING.min_trials,
            "max_trials": FAST_TIMING.max_trials,
            "budget_s": FAST_TIMING.budget_s,
        },
        "keep_threshold": DEFAULT_KEEP_THRESHOLD,
        "confidence": KEEP_CONFIDENCE,
        "max_measurements": MAX_MEASUREMENTS,
        "goals": {"false_keeps": 0.01, "false_discards_loaded": 0.05},
        "cells": cells,
    }


def render(result: dict[str, Any]) -> str:
    lines = [f"keep bench: {result['task']} on {result['target']} ({result['cpus']} CPUs)"]
    for name, cell in result["cells"].items():
        load = cell["load_average_1m"]
        lines.append(
            f"  {name:<15} false {cell['false_kind']}s {cell['false_rate']:6.1%} of {cell['decisions']}  "
            f"median speedup {cell['median_speedup']:.3f}  measurements/decision {cell['mean_measurements']:.2f}  "
            f"load {load['min']:.1f}-{load['max']:.1f}"
            + (f"  failed profiles {cell['failed']}" if cell.get("failed") else "")
        )
    return "\n".join(lines)
