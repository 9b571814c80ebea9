"""Is an in-process evaluation slower right after an isolated one? (matvec baseline, as the bench runs it)"""
import sys, time, tempfile
from dataclasses import replace
from pathlib import Path
from kernelgraph.agent.backends.c import CBackend
from kernelgraph.agent.backends.timing import IN_PROCESS, ISOLATED
from kernelgraph.agent.targets import get_target
from kernelgraph.agent.tasks import get_task
from kernelgraph.bench.configs import checked_configs
from kernelgraph.bench.sandbox import BENCH_TIMING
task = get_task(sys.argv[1]); source = task.source("c", checked_configs(task)[sys.argv[2]]); target = get_target("cpu-x86-64-v2")
timing = replace(BENCH_TIMING, min_trials=30, max_trials=30)
with tempfile.TemporaryDirectory() as tmp:
    b = {p: CBackend(cache_dir=Path(tmp), counters=False, timing=replace(timing, protocol=p)) for p in (ISOLATED, IN_PROCESS)}
    def ev(p):
        t = time.perf_counter(); b[p].check(task, source, target); c = time.perf_counter() - t
        t = time.perf_counter(); b[p].profile(task, source, target, parent_source=source); return c, time.perf_counter() - t
    ev(ISOLATED); ev(IN_PROCESS)
    for r in range(int(sys.argv[3])):
        for label, p in (("I", ISOLATED), ("P after I", IN_PROCESS), ("P after P", IN_PROCESS), ("I after P", ISOLATED), ("I after I", ISOLATED)):
            c, pr = ev(p)
            print(f"{label:10s} check {c:.2f} profile {pr:.2f}", flush=True)
