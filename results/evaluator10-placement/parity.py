"""Per-call times of the candidate by its place in the pair (first/second), both protocols."""
import sys, tempfile, statistics, numpy as np
from dataclasses import replace
from pathlib import Path
from kernelgraph.agent.backends.c import CBackend
from kernelgraph.agent.backends.timing import ISOLATED, IN_PROCESS
from kernelgraph.agent.targets import get_target
from kernelgraph.agent.tasks import get_task
from kernelgraph.bench.configs import checked_configs
from kernelgraph.bench.sandbox import BENCH_TIMING
import kernelgraph.agent.backends.isolated as iso
caught=[]
_orig=iso._run
def _run(*a, **k):
    r=_orig(*a, **k); caught.append(r[0].extra.get("times")); return r
iso._run=_run
task = get_task(sys.argv[1]); label = sys.argv[2]; rounds = int(sys.argv[3])
source = task.source("c", checked_configs(task)[label]); target = get_target("cpu-x86-64-v2")
def riqr(v):
    q1, m, q3 = np.percentile(v, [25, 50, 75]); return m, (q3 - q1) / m
with tempfile.TemporaryDirectory() as cache:
    bs = {p: CBackend(cache_dir=Path(cache) / p, counters=False, timing=replace(BENCH_TIMING, protocol=p)) for p in (IN_PROCESS, ISOLATED)}
    for b in bs.values(): b.compile(task, source, target)
    for r in range(rounds):
        for p, b in bs.items():
            prof = b.profile(task, source, target, parent_source=source)
            line = f"{p:10s} median {prof.median_ns/1e3:7.0f} us relIQR {prof.iqr_ns/prof.median_ns:.3f}"
            if p == ISOLATED:
                t = np.asarray(caught[-1][0], float) / 1e3
                first, second = t[0::2], t[1::2]
                line += f" | first {np.median(first):7.0f} second {np.median(second):7.0f}"
            print(line, flush=True)
for times in caught[-3:]:
    print("cand", [int(v/1e3) for v in times[0]])
    print("par ", [int(v/1e3) for v in times[1]])
