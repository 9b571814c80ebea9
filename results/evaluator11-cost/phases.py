"""Where the wall time of one evaluation goes, per protocol (matmul best-A, histogram baseline)."""
import sys, time, statistics, tempfile, collections
from dataclasses import replace
from pathlib import Path
from kernelgraph.agent.backends import isolated as iso
from kernelgraph.agent.backends.c import CBackend
from kernelgraph.agent.backends.timing import IN_PROCESS, ISOLATED
from kernelgraph.agent.targets import get_target
from kernelgraph.agent.tasks import get_task
from kernelgraph.bench.configs import checked_configs
from kernelgraph.bench.sandbox import BENCH_TIMING

spent = collections.defaultdict(list)
def wrap(owner, name, label):
    f = getattr(owner, name)
    def g(*a, **k):
        t = time.perf_counter()
        try: return f(*a, **k)
        finally: spent[label].append(time.perf_counter() - t)
    setattr(owner, name, g)
wrap(iso.KernelServer, "__init__", "server start")
wrap(iso.KernelServer, "wait_ready", "wait ready")
wrap(iso, "call_overhead", "call overhead")
wrap(iso.KernelServer, "load_kernel", "load kernel")
wrap(iso.KernelServer, "call", "calls (all)")
wrap(iso.CallChecker, "check", "check")
wrap(iso.CallChecker, "write", "write")
wrap(iso.CallChecker, "variant", "variant")
wrap(iso.KernelServer, "close", "close")
wrap(iso.KernelServer, "freeze", "freeze")
wrap(iso.KernelServer, "place", "place")
wrap(iso, "time_isolated", "time_isolated")
task_name, label, reps = sys.argv[1], sys.argv[2], int(sys.argv[3])
task = get_task(task_name); target = get_target("cpu-x86-64-v2")
source = task.source("c", checked_configs(task)[label])
timing = replace(BENCH_TIMING, min_trials=30, max_trials=30)
with tempfile.TemporaryDirectory() as tmp:
    for proto in (ISOLATED, IN_PROCESS):
        backend = CBackend(cache_dir=Path(tmp), counters=False, timing=replace(timing, protocol=proto))
        backend.check(task, source, target); backend.profile(task, source, target, parent_source=source)
        walls = collections.defaultdict(list); spent.clear()
        for r in range(reps):
            t = time.perf_counter(); backend.check(task, source, target); walls["check"].append(time.perf_counter() - t)
            t = time.perf_counter(); p = backend.profile(task, source, target, parent_source=source); walls["profile"].append(time.perf_counter() - t)
        print(proto, {k: f"{statistics.median(v)*1e3:.1f} ms" for k, v in walls.items()})
        for k, v in spent.items():
            print(f"   {k:16s} total/rep {sum(v)/reps*1e3:8.1f} ms  n/rep {len(v)/reps:.0f}")
