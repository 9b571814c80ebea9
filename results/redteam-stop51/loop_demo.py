"""The twin attack through the loop itself (agent.loop.optimize): a scripted proposer proposes
kernels/twin.c, then the byte-identical source again. usage: loop_demo.py RUNS [beside=0|1]"""
import dataclasses, sys, tempfile
from pathlib import Path
sys.path.insert(0, "/work/main")
from kernelgraph.agent import loop
from kernelgraph.agent.backends.timing import TimingPlan, ISOLATED
from kernelgraph.agent.targets import get_target
from kernelgraph.agent.tasks import get_task
from tests.agent.test_red_team import _PastAdmissionC, _Scripted, _NoGraph

runs = int(sys.argv[1]); loop.BASELINE_IN_THE_COMPARISON = (sys.argv[2:] or ["beside=1"])[0] != "beside=0"
task = get_task("rmsnorm")
target = dataclasses.replace(get_target("cpu-x86-64-v2"), peak_gflops=None, peak_gbps=None)
twin = (Path(__file__).parent / "kernels" / "twin.c").read_text()
for run in range(runs):
    backend = _PastAdmissionC(cache_dir=Path(tempfile.mkdtemp(prefix="rt51-loop-")), check_timeout_s=10.0, memory_bytes=768 << 20,
                              counters=False, timing=dataclasses.replace(TimingPlan(), protocol=ISOLATED))
    res = loop.optimize(task, backend, target, _Scripted([twin, twin]), _NoGraph(), budget=2, final_check=False)
    print(f"run {run} beside={loop.BASELINE_IN_THE_COMPARISON} chained={res.chained_speedup:.3f}", flush=True)
    for s in res.steps:
        print("  step", s.step, s.outcome.value, "speedup", s.speedup, "|", (s.diagnosis or "")[:230], flush=True)
