"""Which clock makes the isolated protocol's medians differ from the in-process ones (stop 52).

The isolated protocol charges a serial kernel its CPU time (less the stand-in's); the in-process one
times each call by the wall clock in the kernel's own process. Both also record the other clock: the
in-process child the process CPU time over the timed calls (so its mean per call), the isolated
evaluator each call's wall time until the answer. Per round, each protocol profiles the cell's kernel
against itself (as `kernelgraph bench sandbox` does), in alternating order; printed per round and
summarised as medians over rounds of the protocols' ratios on each clock.

Usage: PYTHONPATH=. python results/stop52/clocks/clocks.py ROUNDS task:config [task:config ...]
With NO_READ_BACK=1 the isolated evaluator skips its read-back of the buffers before each call
(`KernelServer.read_back`, CACHE_LINE's comment in agent/backends/isolated.py): is that what moves
the medians?
"""

from __future__ import annotations

import json
import os
import statistics
import sys
import tempfile
from dataclasses import replace
from pathlib import Path

import numpy as np

import kernelgraph.agent.backends.c as c_backend
from kernelgraph.agent.backends.c import CBackend
from kernelgraph.agent.backends.timing import IN_PROCESS, ISOLATED
from kernelgraph.agent.targets import get_target
from kernelgraph.agent.tasks import get_task
from kernelgraph.bench.configs import checked_configs
from kernelgraph.bench.sandbox import BENCH_TIMING

captured: list[dict] = []
_measured = c_backend.measured_parallelism


def _capture(extra, cores):  # type: ignore[no-untyped-def]
    captured.append(extra)
    return _measured(extra, cores)


c_backend.measured_parallelism = _capture
if os.environ.get("NO_READ_BACK") == "1":
    from kernelgraph.agent.backends.isolated import KernelServer

    KernelServer.read_back = lambda self: None  # type: ignore[method-assign]


def one(backend: CBackend, task, source, target) -> dict[str, float]:  # type: ignore[no-untyped-def]
    for _ in range(4):
        captured.clear()
        profile = backend.profile(task, source, target, parent_source=source)
        if profile.judged:
            break
    extra = captured[-1]
    calls = len(extra["times"][0])
    walls = extra.get("wall_times", extra["times"])[0]
    return {
        "charged_median_ns": float(profile.median_ns),
        "wall_median_ns": float(np.median(walls)),
        "cpu_mean_ns": float(extra["cpu_ns"][0]) / calls,
        "wall_mean_ns": float(np.mean(walls)),
    }


def main() -> None:
    rounds = int(sys.argv[1])
    target = get_target("cpu-x86-64-v2")
    timing = replace(BENCH_TIMING, min_trials=30, max_trials=30)
    out = Path(__file__).with_name("clocks-no-read-back.jsonl" if os.environ.get("NO_READ_BACK") == "1" else "clocks.jsonl")
    with tempfile.TemporaryDirectory() as tmp, out.open("a") as log:
        backends = {p: CBackend(cache_dir=Path(tmp), counters=False, timing=replace(timing, protocol=p))
                    for p in (ISOLATED, IN_PROCESS)}
        for cell in sys.argv[2:]:
            name, label = cell.split(":")
            task = get_task(name)
            source = task.source("c", checked_configs(task)[label])
            rows: dict[str, list[dict[str, float]]] = {ISOLATED: [], IN_PROCESS: []}
            for r in range(rounds):
                order = [ISOLATED, IN_PROCESS] if r % 2 == 0 else [IN_PROCESS, ISOLATED]
                for p in order:
                    rows[p].append(one(backends[p], task, source, target))
                i, o = rows[ISOLATED][-1], rows[IN_PROCESS][-1]
                print(f"{cell} round {r}: isolated charged {i['charged_median_ns']/1e6:.3f} wall {i['wall_median_ns']/1e6:.3f} "
                      f"cpu-mean {i['cpu_mean_ns']/1e6:.3f} | in-process wall {o['wall_median_ns']/1e6:.3f} "
                      f"cpu-mean {o['cpu_mean_ns']/1e6:.3f} wall-mean {o['wall_mean_ns']/1e6:.3f}", flush=True)
                log.write(json.dumps({"cell": cell, "round": r, "isolated": i, "in_process": o}) + "\n")
            def ratio(a: str, b: str) -> float:
                return statistics.median(x[a] / y[b] for x, y in zip(rows[ISOLATED], rows[IN_PROCESS]))
            print(f"{cell}: medians over {rounds} rounds of isolated/in-process: charged/wall {ratio('charged_median_ns', 'wall_median_ns'):.3f}, "
                  f"cpu-mean/cpu-mean {ratio('cpu_mean_ns', 'cpu_mean_ns'):.3f}, wall/wall {ratio('wall_median_ns', 'wall_median_ns'):.3f}; "
                  f"in-process cpu-mean/wall-mean {statistics.median(o['cpu_mean_ns'] / o['wall_mean_ns'] for o in rows[IN_PROCESS]):.3f}", flush=True)


if __name__ == "__main__":
    main()
