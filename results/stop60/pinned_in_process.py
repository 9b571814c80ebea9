"""Is the in-process protocol's spread and slowness on this host its kernel moving between CPUs?
(stop 60: at evaluator 19, the bench's target and 30 trials; paired ratios printed.)

Per cell and repeat, three evaluations as `kernelgraph bench sandbox` makes them (check + profile
against itself, 30 trials): isolated; in-process as it is (the child free to run on either CPU);
in-process with this process, so its child, pinned to one CPU drawn per evaluation (the isolated
protocol pins a serial kernel to a home CPU drawn per comparison). Orders rotate per repeat.
Usage: python pinned_in_process.py REPEATS task:config ...
"""

import itertools
import os
import random
import statistics
import sys
import tempfile
from dataclasses import replace
from pathlib import Path

from kernelgraph.agent.backends.c import CBackend
from kernelgraph.agent.backends.timing import IN_PROCESS, ISOLATED
from kernelgraph.agent.targets import get_target
from kernelgraph.agent.tasks import get_task
from kernelgraph.bench.configs import checked_configs
from kernelgraph.bench.sandbox import BENCH_TIMING, _evaluate_once

repeats = int(sys.argv[1])
target = get_target("cpu-x86-64-v2")
arms = ("isolated", "in-process", "in-process-pinned")
draw = random.Random(60)
allowed = os.sched_getaffinity(0)
with tempfile.TemporaryDirectory() as tmp:
    backends = {
        arm: CBackend(cache_dir=Path(tmp), counters=False,
                      timing=replace(BENCH_TIMING, min_trials=30, max_trials=30, protocol=ISOLATED if arm == "isolated" else IN_PROCESS))
        for arm in arms
    }
    for cell in sys.argv[2:]:
        name, label = cell.split(":")
        task = get_task(name)
        source = task.source("c", checked_configs(task)[label])
        runs = {arm: [] for arm in arms}
        orders = list(itertools.permutations(arms))
        for repeat in range(repeats):
            for arm in orders[repeat % len(orders)]:
                if arm == "in-process-pinned":
                    os.sched_setaffinity(0, {draw.choice(sorted(allowed))})
                try:
                    runs[arm].append(_evaluate_once(task, target, source, backends[arm]))
                finally:
                    os.sched_setaffinity(0, allowed)
        print(f"{name} {label}  load {os.getloadavg()[0]:.2f}", flush=True)
        for arm in arms:
            med = [r["median_ns"] / 1e6 for r in runs[arm]]
            iqr = [r["rel_iqr"] for r in runs[arm]]
            print(f"  {arm:18s} median of medians {statistics.median(med):7.3f} ms  "
                  f"[{' '.join(f'{m:.2f}' for m in med)}]  rel.IQR median {statistics.median(iqr):.3f}", flush=True)
        for arm in arms[1:]:
            ratios = [a["median_ns"] / b["median_ns"] for a, b in zip(runs["isolated"], runs[arm])]
            print(f"  isolated / {arm}: paired median {statistics.median(ratios):.3f}", flush=True)
