"""Per call of a parallel kernel: wall until the answer, CPU until the answer (lagged reading), CPU after it."""
import sys, tempfile, statistics
from dataclasses import replace
from pathlib import Path
import numpy as np
import kernelgraph.agent.backends.isolated as iso
from kernelgraph.agent.backends.c import CBackend
from kernelgraph.agent.backends.timing import ISOLATED
from kernelgraph.agent.targets import get_target
from kernelgraph.agent.tasks import get_task
from kernelgraph.bench.configs import checked_configs
from kernelgraph.bench.sandbox import BENCH_TIMING
rows = []
_pc = iso.KernelServer.process_cpu
seq = []
def pc(self, pids):
    v = _pc(self, pids); seq.append(v); return v
iso.KernelServer.process_cpu = pc
_call = iso.KernelServer.call
def call(self, deadline, command=b"c"):
    seq.clear()
    charged, answered = _call(self, deadline, command)
    if command == b"c" and len(seq) >= 3:
        before, at, after = seq[0], seq[1], seq[-1]
        rows.append((answered, at - before, after - at, charged))
    return charged, answered
iso.KernelServer.call = call
task = get_task(sys.argv[1]); label = sys.argv[2]
source = task.source("c", checked_configs(task)[label]); target = get_target("cpu-x86-64-v2")
with tempfile.TemporaryDirectory() as cache:
    b = CBackend(cache_dir=Path(cache), counters=False, timing=replace(BENCH_TIMING, protocol=ISOLATED))
    for rep in range(int(sys.argv[3])):
        rows.clear()
        p = b.profile(task, source, target, parent_source=source)
        a = np.array(rows) / 1e3
        print(f"median {p.median_ns/1e3:.0f} us | wall-to-answer {np.median(a[:,0]):.0f} cpu-to-answer {np.median(a[:,1]):.0f} cpu-after {np.median(a[:,2]):.0f} (p10 {np.percentile(a[:,2],10):.0f} p90 {np.percentile(a[:,2],90):.0f}) charged {np.median(a[:,3]):.0f}", flush=True)
        print("   cpu-after per call:", " ".join(f"{v:.0f}" for v in a[:24, 2]))
