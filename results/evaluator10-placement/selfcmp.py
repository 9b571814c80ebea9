"""Self-comparison (kernel against itself) per protocol: self-speedup and paired-ratio spread."""
import sys, tempfile, numpy as np
from dataclasses import replace
from pathlib import Path
from kernelgraph.agent.backends.c import CBackend
from kernelgraph.agent.backends.timing import ISOLATED, IN_PROCESS
from kernelgraph.agent.targets import get_target
from kernelgraph.agent.tasks import get_task
from kernelgraph.bench.configs import checked_configs
from kernelgraph.bench.sandbox import BENCH_TIMING
task = get_task(sys.argv[1]); label = sys.argv[2]; rounds = int(sys.argv[3])
protocols = sys.argv[4].split(",") if len(sys.argv) > 4 else [IN_PROCESS, ISOLATED]
source = task.source("c", checked_configs(task)[label]); target = get_target("cpu-x86-64-v2")
with tempfile.TemporaryDirectory() as cache:
    bs = {p: CBackend(cache_dir=Path(cache) / p, counters=False, timing=replace(BENCH_TIMING, protocol=p)) for p in protocols}
    for b in bs.values(): b.compile(task, source, target)
    for r in range(rounds):
        for p, b in bs.items():
            pr = b.profile(task, source, target, parent_source=source)
            q = np.percentile(pr.paired_ratios, [25, 50, 75])
            print(f"{p:10s} median {pr.median_ns/1e3:6.0f} relIQR {pr.iqr_ns/pr.median_ns:.3f} self-speedup {pr.parent_median_ns/pr.median_ns:.3f} paired IQR {q[2]-q[0]:.3f}", flush=True)
