"""Each round profiles TASK CONFIG against itself: in-process, isolated, and isolated with the
evaluator moved off the kernel's CPU for each call (it thaws the child and writes the go byte from
another CPU, so the kernel's main thread does not wait for it, and that other CPU is awake when the
kernel's worker is woken there); and with the evaluator visiting every other CPU just before each
call and coming back (prewake: those CPUs ran a moment before the call). Usage: away.py TASK CONFIG ROUNDS"""
import contextlib, os, statistics, sys, tempfile
from dataclasses import replace
from pathlib import Path
import kernelgraph.agent.backends.isolated as iso
from kernelgraph.agent.backends.c import CBackend
from kernelgraph.agent.backends.timing import IN_PROCESS, ISOLATED
from kernelgraph.agent.targets import get_target
from kernelgraph.agent.tasks import get_task
from kernelgraph.bench.configs import checked_configs
from kernelgraph.bench.sandbox import BENCH_TIMING

call = iso.KernelServer.call
def away_call(self, deadline, command=b"c"):
    allowed = os.sched_getaffinity(0)
    kernel_cpu = next(iter(self.cpus)) if len(self.cpus) == 1 else self.last_cpu()
    others = allowed - {kernel_cpu}
    if not others or len(allowed) == 1:
        return call(self, deadline, command)
    os.sched_setaffinity(0, {min(others)})
    try:
        return call(self, deadline, command)
    finally:
        os.sched_setaffinity(0, allowed)

def prewake_call(self, deadline, command=b"c"):
    """Wakes every other CPU just before the call: this process visits each, then comes back."""
    allowed = os.sched_getaffinity(0)
    kernel_cpu = next(iter(self.cpus)) if len(self.cpus) == 1 else self.last_cpu()
    if kernel_cpu is not None and len(allowed) > 1:
        for cpu in sorted(allowed - {kernel_cpu}) + [kernel_cpu]:
            os.sched_setaffinity(0, {cpu})
        os.sched_setaffinity(0, allowed)
    return call(self, deadline, command)

task = get_task(sys.argv[1]); source = task.source("c", checked_configs(task)[sys.argv[2]]); target = get_target("cpu-x86-64-v2")
res = {"in-process": [], "isolated": [], "isolated, away": [], "isolated, prewake": []}
with tempfile.TemporaryDirectory() as cache:
    b = {p: CBackend(cache_dir=Path(cache), counters=False, timing=replace(BENCH_TIMING, protocol=p)) for p in (ISOLATED, IN_PROCESS)}
    for r in range(int(sys.argv[3])):
        res["in-process"].append(b[IN_PROCESS].profile(task, source, target, parent_source=source).median_ns)
        iso.KernelServer.call = call
        res["isolated"].append(b[ISOLATED].profile(task, source, target, parent_source=source).median_ns)
        iso.KernelServer.call = away_call
        res["isolated, away"].append(b[ISOLATED].profile(task, source, target, parent_source=source).median_ns)
        iso.KernelServer.call = prewake_call
        res["isolated, prewake"].append(b[ISOLATED].profile(task, source, target, parent_source=source).median_ns)
        iso.KernelServer.call = call
        print(r, {k: round(v[-1] / 1e3) for k, v in res.items()}, flush=True)
ip = statistics.median(res["in-process"])
for k, v in res.items():
    print(f"{k:16s} {statistics.median(v)/1e3:8.0f} us x{statistics.median(v)/ip:.3f}")
