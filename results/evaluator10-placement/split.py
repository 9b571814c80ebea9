"""check and profile wall per protocol, interleaved rounds."""
import sys, tempfile, time, statistics
from dataclasses import replace
from pathlib import Path
from kernelgraph.agent.backends.c import CBackend
from kernelgraph.agent.backends.timing import ISOLATED, IN_PROCESS
from kernelgraph.agent.targets import get_target
from kernelgraph.agent.tasks import get_task
from kernelgraph.bench.configs import checked_configs
from kernelgraph.bench.sandbox import BENCH_TIMING
task = get_task(sys.argv[1]); label = sys.argv[2]; rounds = int(sys.argv[3])
source = task.source("c", checked_configs(task)[label]); target = get_target("cpu-x86-64-v2")
res = {p: {"check": [], "profile": []} for p in (IN_PROCESS, ISOLATED)}
with tempfile.TemporaryDirectory() as cache:
    bs = {p: CBackend(cache_dir=Path(cache) / p, counters=False, timing=replace(BENCH_TIMING, protocol=p)) for p in res}
    for b in bs.values(): b.compile(task, source, target)
    for r in range(rounds):
        for p, b in (bs.items() if r % 2 else reversed(bs.items())):
            t = time.perf_counter(); b.check(task, source, target); t1 = time.perf_counter()
            b.profile(task, source, target, parent_source=source); t2 = time.perf_counter()
            if r: res[p]["check"].append(t1 - t); res[p]["profile"].append(t2 - t1)
for p, d in res.items():
    print(p, {k: f"{statistics.median(v)*1e3:.0f} ms" for k, v in d.items()})
