"""Interleaved rounds: in-process, isolated, and isolated with a nice-19 spinner on every CPU (SCHED_IDLE starves normal tasks on this 6.18 kernel: a task beside one ran 20x slower)
(the vCPUs never halt between calls). QUIET_PAIRS off in both isolated modes: the spinners are
runnable tasks. Usage: spin.py TASK CONFIG REPEATS"""
import os, statistics, subprocess, sys, tempfile
from dataclasses import replace
from pathlib import Path
import kernelgraph.agent.backends.isolated as iso
from kernelgraph.agent.backends.c import CBackend
from kernelgraph.agent.backends.timing import IN_PROCESS, ISOLATED
from kernelgraph.agent.targets import get_target
from kernelgraph.agent.tasks import get_task
from kernelgraph.bench.configs import checked_configs
from kernelgraph.bench.sandbox import BENCH_TIMING

SPIN = ("import os,sys; os.sched_setaffinity(0,{int(sys.argv[1])}); "
        "os.nice(19)\nwhile True: pass")
task = get_task(sys.argv[1]); label = sys.argv[2]; reps = int(sys.argv[3])
source = task.source("c", checked_configs(task)[label]); target = get_target("cpu-x86-64-v2")
iso.QUIET_PAIRS = False
res = {m: [] for m in ("in-process", "isolated", "isolated+nice19-spin")}
with tempfile.TemporaryDirectory() as cache:
    b = {p: CBackend(cache_dir=Path(cache), counters=False, timing=replace(BENCH_TIMING, protocol=p)) for p in (ISOLATED, IN_PROCESS)}
    b[ISOLATED].compile(task, source, target)
    for r in range(reps):
        res["in-process"].append(b[IN_PROCESS].profile(task, source, target, parent_source=source).median_ns)
        res["isolated"].append(b[ISOLATED].profile(task, source, target, parent_source=source).median_ns)
        spinners = [subprocess.Popen([sys.executable, "-c", SPIN, str(c)]) for c in sorted(os.sched_getaffinity(0))]
        try:
            prof = b[ISOLATED].profile(task, source, target, parent_source=source)
            if prof.median_ns != prof.median_ns: print(prof.outcome, prof.reason)
            res["isolated+nice19-spin"].append(prof.median_ns)
        finally:
            for s in spinners: s.kill(); s.wait()
        print(r, {m: round(v[-1] / 1e3) for m, v in res.items()}, flush=True)
ip = statistics.median(res["in-process"])
for m, v in res.items():
    print(f"{m:24s} median {statistics.median(v)/1e3:8.1f} us  x{statistics.median(v)/ip:.3f}")
