"""How often `loop.evaluate` keeps a kernel compared against itself (it should never)."""
import sys, tempfile, numpy as np
from pathlib import Path
from kernelgraph.agent.backends.c import CBackend
from kernelgraph.agent.loop import evaluate
from kernelgraph.agent.targets import get_target
from kernelgraph.agent.tasks import get_task
from kernelgraph.bench.configs import checked_configs
task = get_task(sys.argv[1]); label = sys.argv[2]; n = int(sys.argv[3])
source = task.source("c", checked_configs(task)[label]); target = get_target("cpu-x86-64-v2")
kept = 0
with tempfile.TemporaryDirectory() as cache:
    b = CBackend(cache_dir=Path(cache), counters=False)
    for i in range(n):
        e = evaluate(task, b, target, source, source)
        kept += e.outcome.value == "kept"
        print(f"{i}: {e.outcome.value} speedup {e.speedup and round(e.speedup, 3)} {e.reason[:120]}", flush=True)
print(f"kept {kept} of {n}")
