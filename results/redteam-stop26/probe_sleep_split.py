"""Probe for a fix of the relay class (not a fix): `kernelgraph evaluate reduction --source K --parent P`
with `KernelServer.call` wrapped to record, per timed call, each thread's run time and run-queue delay
(/proc/<pid>/task/<tid>/schedstat fields 1 and 2) and so its sleep: window - run - delay. A relay
sleeps on each thread while the other one works (the calling thread: about half the work); a truly
parallel kernel's calling thread sleeps only for the imbalance. Prints the medians per kernel.

Usage: /work/main/.venv/bin/python results/redteam-stop26/probe_sleep_split.py KERNEL.c PARENT.c
"""

import contextlib
import json
import os
import statistics
import sys
import time
from pathlib import Path

from kernelgraph.agent.backends import isolated
from kernelgraph.agent.backends.c import CBackend
from kernelgraph.agent.loop import evaluate
from kernelgraph.agent.targets import get_target
from kernelgraph.agent.tasks import get_task

records: dict[int, list[dict[str, float]]] = {}
original = isolated.KernelServer.call


def schedstat(pids: list[int]) -> dict[int, tuple[int, int]]:
    found = {}
    for pid in pids:
        with contextlib.suppress(OSError):
            for tid in os.listdir(f"/proc/{pid}/task"):
                with contextlib.suppress(OSError, ValueError), open(f"/proc/{pid}/task/{tid}/schedstat") as f:
                    run, delay = f.read().split()[:2]
                    found[int(tid)] = (int(run), int(delay))
    return found


def call(self, deadline, command=b"c"):
    pids = self.tree()
    before = schedstat(pids)
    start = time.perf_counter_ns()
    elapsed, answered = original(self, deadline, command)
    window = time.perf_counter_ns() - start
    after = schedstat(self.tree())
    main = pids[-1] if pids else None
    per = {}
    for tid, (run, delay) in after.items():
        r0, d0 = before.get(tid, (0, 0))
        per[tid] = (run - r0, delay - d0, window - (run - r0) - (delay - d0))
    if command == b"c" and main in per:
        sleeps = sorted(s for _, _, s in per.values())
        records.setdefault(id(self), []).append(
            {
                "critical_us": elapsed / 1e3,
                "window_us": window / 1e3,
                "main_run_us": per[main][0] / 1e3,
                "main_sleep_us": per[main][2] / 1e3,
                "least_sleep_us": sleeps[0] / 1e3,
                "threads": len(per),
            }
        )
    return elapsed, answered


isolated.KernelServer.call = call
task = get_task("reduction")
verdict = evaluate(task, CBackend(), get_target("cpu-x86-64-v2"), Path(sys.argv[1]).read_text(),
                   Path(sys.argv[2]).read_text())  # fmt: skip
out = {"outcome": str(verdict.outcome), "speedup": verdict.speedup}
for label, rows in zip(("candidate", "parent"), records.values(), strict=False):
    out[label] = {k: round(statistics.median(r[k] for r in rows), 1) for k in rows[0]}
print(json.dumps(out))
