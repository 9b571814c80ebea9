"""Per profile of TASK CONFIG against itself (isolated, the cost bench plan at 30 pairs), with the rule
holding every comparison ("rule", evaluator 13's first form) and with no allowance ("off"): the wall time,
the pairs left out, the others' CPU time beside each call and how many calls it flags. Written when the
rule held every comparison; run now, "beside" counts only pairs of a comparison with a parallel kernel.
Usage: beside_serial.py TASK CONFIG"""
import math, statistics, sys, tempfile, time
from dataclasses import replace
from pathlib import Path
import kernelgraph.agent.backends.isolated as iso
from kernelgraph.agent.backends.c import CBackend
from kernelgraph.agent.backends.timing import ISOLATED
from kernelgraph.agent.targets import get_target
from kernelgraph.agent.tasks import get_task
from kernelgraph.bench.configs import checked_configs
from kernelgraph.bench.sandbox import BENCH_TIMING
reports = []
run = iso._run
def kept(*a, **k):
    r, c = run(*a, **k); reports.append(r.extra); return r, c
iso._run = kept
others = []
call = iso.KernelServer.call
def c2(self, deadline, command=b"c"):
    r = call(self, deadline, command)
    if command == b"c": others.append((self.call_others_ns, r[1]))
    return r
iso.KernelServer.call = c2
task = get_task(sys.argv[1]); source = task.source("c", checked_configs(task)[sys.argv[2]]); target = get_target("cpu-x86-64-v2")
with tempfile.TemporaryDirectory() as cache:
    b = CBackend(cache_dir=Path(cache), counters=False, timing=replace(BENCH_TIMING, protocol=ISOLATED, min_trials=30, max_trials=30))
    b.compile(task, source, target)
    for mode in ("rule", "off", "rule", "off"):
        iso.OTHERS_CPU_ALLOWED_NS = 150_000 if mode == "rule" else math.inf
        reports.clear(); others.clear()
        t = time.perf_counter(); p = b.profile(task, source, target, parent_source=source); w = time.perf_counter() - t
        e = reports[-1]
        o = sorted(x[0] for x in others if x[0] is not None)
        flagged = sum(iso.ran_beside(x, wl) for x, wl in others if x is not None)
        print(f"{mode:4s} wall {w:.2f} s, crowded {e.get('crowded_pairs')}, beside {e.get('ran_beside_pairs')}, calls {len(others)}; others us p50 {o[len(o)//2]/1e3:.0f} p90 {o[int(.9*len(o))]/1e3:.0f} max {o[-1]/1e3:.0f}; flagged calls {flagged}", flush=True)
