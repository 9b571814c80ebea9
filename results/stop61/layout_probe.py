"""Stop 61: is matmul best-A's few per cent the isolated children's one fixed address layout
(ASLR off, `fixed_layout`: every isolated child of every comparison gets the same stack, heap and
library addresses) rather than the protocol? Arms rotating per repeat: in-process (randomised
layout); isolated as it is; isolated with the layout randomised (`fixed_layout` off: a probe only,
the two kernels of a comparison then differ in layout). 30 trials, cpu-x86-64-v2.
Usage: python layout_probe.py REPEATS task:config ..."""

import statistics
import sys
import tempfile
from dataclasses import replace
from pathlib import Path

from kernelgraph.agent.backends import bubblewrap
from kernelgraph.agent.backends.c import CBackend
from kernelgraph.agent.backends.timing import IN_PROCESS, ISOLATED
from kernelgraph.agent.targets import get_target
from kernelgraph.agent.tasks import get_task
from kernelgraph.bench.configs import checked_configs
from kernelgraph.bench.sandbox import BENCH_TIMING, _evaluate_once

real_limiter = bubblewrap._limiter


def random_layout(limits, per_user_inside, fixed_layout=False):
    return real_limiter(limits, per_user_inside, False)


ARMS = ("in-process", "isolated", "isolated-randomised")
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
                bubblewrap._limiter = random_layout if arm == "isolated-randomised" else real_limiter
                try:
                    runs[(name, label), arm].append(_evaluate_once(task, target, source, backends[arm])["median_ns"])
                finally:
                    bubblewrap._limiter = real_limiter
    for c in cells:
        print(f"{c[0]} {c[1]}:", flush=True)
        for arm in ARMS:
            ratios = [v / r for v, r in zip(runs[c, arm], runs[c, "in-process"])]
            print(f"  {arm:20s} median {statistics.median(runs[c, arm]) / 1e3:7.0f} us  paired over in-process "
                  f"{statistics.median(ratios):.3f}  [{' '.join(f'{x:.3f}' for x in ratios)}]", flush=True)
