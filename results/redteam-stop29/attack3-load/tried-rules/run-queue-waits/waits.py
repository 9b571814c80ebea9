import sys, statistics, subprocess, time
from kernelgraph.agent.backends import c as cb, isolated
from kernelgraph.agent.backends.c import CBackend
from kernelgraph.agent.backends.timing import ISOLATED, FAST_TIMING
from dataclasses import replace
from kernelgraph.agent.targets import get_target
from kernelgraph.agent.tasks import get_task
from kernelgraph.agent.loop import evaluate
import tempfile
from pathlib import Path
runs = []
real = cb.paired_ratios
cb.paired_ratios = lambda extra: runs.append(extra) or real(extra)
task = get_task("layernorm"); target = get_target("cpu-x86-64-v2")
rt = Path(__file__).resolve().parents[2]
s, p = (rt / "serial_vs_parallel_layernorm.c").read_text(), (rt / "serial_vs_parallel_layernorm_parent.c").read_text()
hogs = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(int(sys.argv[1]))]
time.sleep(1)
with tempfile.TemporaryDirectory() as d:
    b = CBackend(cache_dir=Path(d), counters=False, timing=FAST_TIMING)
    v = evaluate(task, b, target, s, p)
for h in hogs: h.kill()
e = runs[0]
for k, name in ((0, "candidate"), (1, "parent")):
    w = e["waits"][k]; wall = e["wall_times"][k]; t = e["times"][k]
    print(name, "busy", statistics.median(e["busy_threads"][k]), "wait us p50/p90", statistics.median(w)/1e3, sorted(w)[int(.9*len(w))]/1e3, "wall us", statistics.median(wall)/1e3, "charged us", statistics.median(t)/1e3)
print(v.outcome, v.reason[:150])
