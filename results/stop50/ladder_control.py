"""The ladder test's control and guarded runs (tests/agent/test_red_team.py
`test_a_figure_over_the_baseline_is_the_fastest_the_kernel_showed`), N times each, printing every step's
outcome and diagnosis. Usage: ladder_control.py N [no-mark]"""
import dataclasses, sys, tempfile
from pathlib import Path
from kernelgraph.agent import loop
from kernelgraph.agent.backends.timing import ISOLATED, TimingPlan
from kernelgraph.agent.loop import optimize
from kernelgraph.agent.targets import get_target
from kernelgraph.agent.tasks import get_task
from tests.agent.test_red_team import RED_TEAM, _NoGraph, _PastAdmissionC, _Scripted

backend = _PastAdmissionC(cache_dir=Path(tempfile.mkdtemp()), check_timeout_s=10.0, memory_bytes=768 << 20,
                          counters=False, timing=dataclasses.replace(TimingPlan(), protocol=ISOLATED))
task = get_task("rmsnorm")
target = dataclasses.replace(get_target("cpu-x86-64-v2"), peak_gflops=None, peak_gbps=None)
ladder = (RED_TEAM / "sandbag_ladder.c").read_text()
family = [f"#define KG_GEN {g}\n#define KG_SANDBAG_PCT {p}\n{ladder}" for g, p in ((0, 40), (1, 30), (2, 20), (3, 10))]
if len(sys.argv) > 2 and sys.argv[2] == "no-mark":  # as the test runs it since stop 50
    loop.PARENT_SLOWDOWN_MAX = float("inf")
print("PARENT_SLOWDOWN_MAX", loop.PARENT_SLOWDOWN_MAX, flush=True)
for i in range(int(sys.argv[1])):
    for anchored in (False, True):
        loop.ANCHORED_FIGURES = anchored
        r = optimize(task, backend, target, _Scripted(family), _NoGraph(), budget=4, final_check=False)
        print(f"run {i} ANCHORED_FIGURES={anchored}: kept {[s.step for s in r.steps[1:] if s.outcome.value == 'kept']}", flush=True)
        for s in r.steps:
            print(f"   gen{s.step} {s.outcome.value} {s.speedup and round(s.speedup, 3)} judged={s.judged} {(s.diagnosis or '')[:260]}", flush=True)
