"""Where a call's evaluator-side wall time goes: freeze(), tree walks, thread_cpu, per call."""
import sys, tempfile, time, statistics
from collections import defaultdict
from dataclasses import replace
from pathlib import Path
import kernelgraph.agent.backends.isolated as iso
from kernelgraph.agent.backends.c import CBackend
from kernelgraph.agent.backends.timing import ISOLATED
from kernelgraph.agent.targets import get_target
from kernelgraph.agent.tasks import get_task
from kernelgraph.bench.configs import checked_configs
from kernelgraph.bench.sandbox import BENCH_TIMING
spent = defaultdict(list)
def timed(owner, name):
    f = getattr(owner, name)
    def w(*a, **k):
        t = time.perf_counter_ns()
        try: return f(*a, **k)
        finally: spent[name].append(time.perf_counter_ns() - t)
    setattr(owner, name, w)
for n in ("freeze", "thaw", "tree", "thread_cpu", "process_cpu", "call", "close", "wait_ready", "read_back", "load_kernel"):
    timed(iso.KernelServer, n)
timed(iso.CallChecker, "check"); timed(iso.CallChecker, "write"); timed(iso, "call_overhead")
task = get_task(sys.argv[1]); label = sys.argv[2]
source = task.source("c", checked_configs(task)[label]); target = get_target("cpu-x86-64-v2")
with tempfile.TemporaryDirectory() as cache:
    b = CBackend(cache_dir=Path(cache), counters=False, timing=replace(BENCH_TIMING, protocol=ISOLATED))
    b.compile(task, source, target)
    for r in range(4):
        spent.clear()
        t = time.perf_counter()
        p = b.profile(task, source, target, parent_source=source)
        total = time.perf_counter() - t
    print(f"profile {total*1e3:.1f} ms")
    for n, v in sorted(spent.items(), key=lambda x: -sum(x[1])):
        print(f"  {n:14s} n={len(v):4d} total {sum(v)/1e6:7.1f} ms  median {statistics.median(v)/1e3:8.1f} us")
