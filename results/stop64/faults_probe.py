"""Stop 64: minor page faults and system time of the kernel's process per timed call, confined against
unconfined (matmul best-A mallocs an n*n transpose each call). Usage: python faults_probe.py REPEATS"""
import statistics, sys, tempfile
from dataclasses import replace
from pathlib import Path
from kernelgraph.agent.backends import isolated
from kernelgraph.agent.backends.bubblewrap import Sandbox
from kernelgraph.agent.backends.c import CBackend
from kernelgraph.agent.backends.timing import ISOLATED
from kernelgraph.agent.targets import get_target
from kernelgraph.agent.tasks import get_task
from kernelgraph.bench.configs import checked_configs
from kernelgraph.bench.sandbox import BENCH_TIMING, _evaluate_once

real_call = isolated.KernelServer._call
seen: list[tuple[int, int, int]] = []
def stat(pid):
    f = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    return int(f[7]), int(f[11]), int(f[12])  # minflt, utime, stime
def call(self, deadline, command=b"c"):
    pid = self.kernel_pid(); a = stat(pid)
    r = real_call(self, deadline, command)
    if command == b"c":
        b = stat(pid); seen.append(tuple(y - x for x, y in zip(a, b)))
    return r
isolated.KernelServer._call = call
task = get_task("matmul"); source = task.source("c", checked_configs(task)["best-A"])
target = get_target("cpu-x86-64-v2")
with tempfile.TemporaryDirectory() as tmp:
    for rep in range(int(sys.argv[1])):
        for arm, sb in (("confined", Sandbox()), ("unconfined", Sandbox(enabled=False))):
            be = CBackend(cache_dir=Path(tmp) / arm, counters=False, sandbox=sb, timing=replace(BENCH_TIMING, protocol=ISOLATED))
            seen.clear()
            ms = _evaluate_once(task, target, source, be)["median_ns"] / 1e6
            flt = [s[0] for s in seen]; sys_t = sum(s[2] for s in seen); usr = sum(s[1] for s in seen)
            print(f"{arm:10s} {ms:.3f} ms; calls {len(seen)}; minflt/call median {statistics.median(flt)} max {max(flt)}; utime {usr} stime {sys_t} ticks", flush=True)
