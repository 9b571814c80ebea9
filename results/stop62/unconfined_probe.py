"""Stop 62: is matmul best-A's isolated excess bubblewrap's (namespaces, uid switch, its init) or
the isolated child's own? Four arms, each protocol with the sandbox on and off
(`Sandbox(enabled=False)`, no bubblewrap, no seccomp), repeat-major with the arm order rotated,
30 trials; ratios paired by repeat over the confined in-process arm. Output: unconfined_probe.out.
Usage: python unconfined_probe.py REPEATS [CELL ...] (cells task:config, default matmul:best-A)"""

import statistics
import sys
import tempfile
from dataclasses import replace
from pathlib import Path

from kernelgraph.agent.backends.bubblewrap import Sandbox
from kernelgraph.agent.backends.c import CBackend
from kernelgraph.agent.backends.timing import IN_PROCESS, ISOLATED
from kernelgraph.agent.targets import get_target
from kernelgraph.agent.tasks import get_task
from kernelgraph.bench.configs import checked_configs
from kernelgraph.bench.sandbox import BENCH_TIMING

ARMS = {
    "in-process": (IN_PROCESS, True), "isolated": (ISOLATED, True),
    "in-process-unconfined": (IN_PROCESS, False), "isolated-unconfined": (ISOLATED, False),
}  # fmt: skip
base = replace(BENCH_TIMING, min_trials=30, max_trials=30)
target = get_target("cpu-x86-64-v2")
repeats = int(sys.argv[1])
cells = sys.argv[2:] or ["matmul:best-A"]
with tempfile.TemporaryDirectory() as tmp:
    backends = {
        arm: CBackend(cache_dir=Path(tmp), counters=False, timing=replace(base, protocol=p), sandbox=Sandbox(enabled=on))
        for arm, (p, on) in ARMS.items()
    }
    runs = {(c, arm): [] for c in cells for arm in ARMS}
    for repeat in range(repeats):
        order = list(ARMS)
        order = order[repeat % len(order):] + order[: repeat % len(order)]
        for cell in cells:
            name, config = cell.split(":")
            task = get_task(name)
            src = task.source("c", checked_configs(task)[config])
            for arm in order:
                prof = backends[arm].profile(task, src, target, parent_source=src)
                runs[cell, arm].append(prof.median_ns if prof.judged else float("nan"))
    for cell in cells:
        ref = runs[cell, "in-process"]
        for arm in ARMS:
            ratios = [x / r for x, r in zip(runs[cell, arm], ref)]
            print(f"{cell:18s} {arm:22s} {statistics.median(runs[cell, arm]) / 1e3:8.0f} us  over confined in-process "
                  f"{statistics.median(ratios):.3f}  [{' '.join(f'{x:.3f}' for x in ratios)}]", flush=True)
