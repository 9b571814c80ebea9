"""layernorm best-B (or TASK CONFIG) against itself, per round: in-process, isolated, and isolated with
the evaluator busy-waiting GAP us after each thaw (before the go byte), to keep the CPUs awake.
Usage: gap.py TASK CONFIG ROUNDS GAP_US"""
import statistics, sys, tempfile, time
from dataclasses import replace
from pathlib import Path
import kernelgraph.agent.backends.isolated as iso
from kernelgraph.agent.backends.c import CBackend
from kernelgraph.agent.backends.timing import IN_PROCESS, ISOLATED
from kernelgraph.agent.targets import get_target
from kernelgraph.agent.tasks import get_task
from kernelgraph.bench.configs import checked_configs
from kernelgraph.bench.sandbox import BENCH_TIMING
GAP = float(sys.argv[4]) * 1e-6
orig_thaw = iso.KernelServer.thaw
def thaw(self, pids=None):
    orig_thaw(self, pids)
    end = time.perf_counter() + GAP
    while time.perf_counter() < end: pass
task = get_task(sys.argv[1]); source = task.source("c", checked_configs(task)[sys.argv[2]]); target = get_target("cpu-x86-64-v2")
with tempfile.TemporaryDirectory() as cache:
    b = {p: CBackend(cache_dir=Path(cache), counters=False, timing=replace(BENCH_TIMING, protocol=p)) for p in (ISOLATED, IN_PROCESS)}
    res = {"in-process": [], "isolated": [], f"gap {GAP*1e6:.0f} us": []}
    for r in range(int(sys.argv[3])):
        res["in-process"].append(b[IN_PROCESS].profile(task, source, target, parent_source=source).median_ns)
        iso.KernelServer.thaw = orig_thaw
        res["isolated"].append(b[ISOLATED].profile(task, source, target, parent_source=source).median_ns)
        iso.KernelServer.thaw = thaw
        res[f"gap {GAP*1e6:.0f} us"].append(b[ISOLATED].profile(task, source, target, parent_source=source).median_ns)
        iso.KernelServer.thaw = orig_thaw
        print(r, {k: round(v[-1]/1e3) for k, v in res.items()}, flush=True)
    ip = statistics.median(res["in-process"])
    for k, v in res.items(): print(f"{k:14s} {statistics.median(v)/1e3:7.0f} us x{statistics.median(v)/ip:.3f}")
