"""Who is runnable when a pair's sample says crowded."""
import os, sys, tempfile, collections
from dataclasses import replace
from pathlib import Path
import kernelgraph.agent.backends.isolated as iso
from kernelgraph.agent.backends.c import CBackend
from kernelgraph.agent.backends.timing import ISOLATED
from kernelgraph.agent.targets import get_target
from kernelgraph.agent.tasks import get_task
from kernelgraph.bench.configs import checked_configs
from kernelgraph.bench.sandbox import BENCH_TIMING
seen = collections.Counter(); samples = [0, 0]
orig = iso.runnable_tasks
def runnable():
    n = orig(); samples[0] += 1
    if n > 1:
        samples[1] += 1
        me = os.getpid()
        for pid in os.listdir("/proc"):
            if not pid.isdigit(): continue
            try:
                for tid in os.listdir(f"/proc/{pid}/task"):
                    st = open(f"/proc/{pid}/task/{tid}/stat").read()
                    name, rest = st.rsplit(")", 1); state = rest.split()[0]
                    if state == "R" and int(pid) != me:
                        seen[name.split("(", 1)[1]] += 1
            except OSError: pass
    return n
iso.runnable_tasks = runnable
task = get_task(sys.argv[1]); source = task.source("c", checked_configs(task)[sys.argv[2]]); target = get_target("cpu-x86-64-v2")
with tempfile.TemporaryDirectory() as cache:
    b = CBackend(cache_dir=Path(cache), counters=False, timing=replace(BENCH_TIMING, protocol=ISOLATED))
    for _ in range(3):
        p = b.profile(task, source, target, parent_source=source)
print(samples, seen.most_common(8))
