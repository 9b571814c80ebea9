"""Why a short parallel kernel reads slower isolated: each round profiles layernorm's 2-thread best-B
(0.29 ms a call) against itself with the in-process and the isolated protocol (the cost bench's
plan), and prints each protocol's median, the CPU time of all its threads per call, and the share
of its two cores it used (`cpu_utilization`: CPU time / time / cores). Usage: late_worker.py TASK
CONFIG ROUNDS"""
import statistics, sys, tempfile
from dataclasses import replace
from pathlib import Path
from kernelgraph.agent.backends.c import CBackend
from kernelgraph.agent.backends.timing import IN_PROCESS, ISOLATED
from kernelgraph.agent.targets import get_target
from kernelgraph.agent.tasks import get_task
from kernelgraph.bench.configs import checked_configs
from kernelgraph.bench.sandbox import BENCH_TIMING
from kernelgraph.core.models import CounterName

task = get_task(sys.argv[1]); source = task.source("c", checked_configs(task)[sys.argv[2]])
target = get_target("cpu-x86-64-v2")
seen: dict[str, list[tuple[float, float, float]]] = {IN_PROCESS: [], ISOLATED: []}
with tempfile.TemporaryDirectory() as cache:
    backends = {p: CBackend(cache_dir=Path(cache), counters=False, timing=replace(BENCH_TIMING, protocol=p)) for p in seen}
    for r in range(int(sys.argv[3])):
        for protocol, backend in backends.items():
            p = backend.profile(task, source, target, parent_source=source)
            seen[protocol].append((p.median_ns / 1e3, p.counters[CounterName.CPU_TIME_NS] / 1e3, p.counters[CounterName.CPU_UTILIZATION]))
        print(r, "  ".join(f"{k}: median {v[-1][0]:.0f} us, CPU {v[-1][1]:.0f} us/call, used {v[-1][2]:.2f} of 2 cores" for k, v in seen.items()), flush=True)
for k, v in seen.items():
    print(f"{k:10s} medians over rounds: time {statistics.median(x[0] for x in v):.0f} us, CPU {statistics.median(x[1] for x in v):.0f} us/call, used {statistics.median(x[2] for x in v):.2f} of 2 cores")
