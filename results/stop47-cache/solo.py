"""TASK CONFIG against itself and alone, per round: in-process and isolated, interleaved.
Usage: solo.py TASK CONFIG ROUNDS"""
import statistics, sys, tempfile
from dataclasses import replace
from pathlib import Path
from kernelgraph.agent.backends.c import CBackend
from kernelgraph.agent.backends.timing import IN_PROCESS, ISOLATED
from kernelgraph.agent.targets import get_target
from kernelgraph.agent.tasks import get_task
from kernelgraph.bench.configs import checked_configs
from kernelgraph.bench.sandbox import BENCH_TIMING
task = get_task(sys.argv[1]); source = task.source("c", checked_configs(task)[sys.argv[2]]); target = get_target("cpu-x86-64-v2")
with tempfile.TemporaryDirectory() as cache:
    b = {p: CBackend(cache_dir=Path(cache), counters=False, timing=replace(BENCH_TIMING, protocol=p)) for p in (ISOLATED, IN_PROCESS)}
    res = {}
    for r in range(int(sys.argv[3])):
        for name, p, parent in (("in-process pair", IN_PROCESS, source), ("isolated pair", ISOLATED, source),
                                ("in-process solo", IN_PROCESS, None), ("isolated solo", ISOLATED, None)):
            res.setdefault(name, []).append(b[p].profile(task, source, target, parent_source=parent).median_ns)
        print(r, {k: round(v[-1] / 1e3) for k, v in res.items()}, flush=True)
    for k, v in res.items():
        ref = statistics.median(res["in-process " + k.split()[1]])
        print(f"{k:16s} {statistics.median(v)/1e3:7.0f} us x{statistics.median(v)/ref:.3f}")
