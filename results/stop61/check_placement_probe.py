"""Stop 61: does the evaluator's check between calls (matmul's reference is an f8 matmul: OpenBLAS,
AVX-512 on this host) slow the next call of a kernel on the core it ran on? Arms rotating per repeat:
in-process; isolated as it is (the check runs wherever the scheduler puts the evaluator's thread and
OpenBLAS's threads); isolated with each check run on the CPU the kernel's call is NOT placed on;
isolated with each check run on the call's CPU. Run with OPENBLAS_NUM_THREADS=1 to keep the check on
the thread placed. 30 trials, cpu-x86-64-v2. Usage: python check_placement_probe.py REPEATS task:config ..."""

import contextlib
import os
import statistics
import sys
import tempfile
from dataclasses import replace
from pathlib import Path

from kernelgraph.agent.backends import isolated
from kernelgraph.agent.backends.c import CBackend
from kernelgraph.agent.backends.timing import IN_PROCESS, ISOLATED
from kernelgraph.agent.targets import get_target
from kernelgraph.agent.tasks import get_task
from kernelgraph.bench.configs import checked_configs
from kernelgraph.bench.sandbox import BENCH_TIMING, _evaluate_once

real_check = isolated.CallChecker.check
WHERE = {"isolated": None, "check-elsewhere": "other", "check-on-call-cpu": "same"}


def placed_check(where):
    def check(self, call, servers):
        allowed = os.sched_getaffinity(0)
        home = set(servers[0].cpus) or {os.sched_getcpu()}
        cpus = (allowed - home or allowed) if where == "other" else (home & allowed or allowed)
        os.sched_setaffinity(0, cpus)
        try:
            return real_check(self, call, servers)
        finally:
            os.sched_setaffinity(0, allowed)
    return check


ARMS = ("in-process", *WHERE)
base = replace(BENCH_TIMING, min_trials=30, max_trials=30)
target = get_target("cpu-x86-64-v2")
repeats = int(sys.argv[1])
with tempfile.TemporaryDirectory() as tmp:
    backends = {arm: CBackend(cache_dir=Path(tmp), counters=False,
                              timing=replace(base, protocol=IN_PROCESS if arm == "in-process" else ISOLATED))
                for arm in ARMS}
    cells = [tuple(c.split(":")) for c in sys.argv[2:]]
    runs = {(c, a): [] for c in cells for a in ARMS}
    for repeat in range(repeats):
        for name, label in cells:
            task = get_task(name)
            source = task.source("c", checked_configs(task)[label])
            for arm in ARMS[repeat % len(ARMS):] + ARMS[:repeat % len(ARMS)]:
                where = WHERE.get(arm)
                isolated.CallChecker.check = placed_check(where) if where else real_check
                try:
                    runs[(name, label), arm].append(_evaluate_once(task, target, source, backends[arm])["median_ns"])
                finally:
                    isolated.CallChecker.check = real_check
    for c in cells:
        print(f"{c[0]} {c[1]}:", flush=True)
        for arm in ARMS:
            ratios = [v / r for v, r in zip(runs[c, arm], runs[c, "in-process"])]
            print(f"  {arm:18s} median {statistics.median(runs[c, arm]) / 1e3:7.0f} us  paired over in-process "
                  f"{statistics.median(ratios):.3f}  [{' '.join(f'{x:.3f}' for x in ratios)}]", flush=True)
