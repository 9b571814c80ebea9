"""A memoryless matmul run of 8 steps (seed 3, the loop test's quick timing plan), N times: each step's outcome and
whether it was judged. Usage: python results/stop50/unjudged.py N"""
import uuid, sys, tempfile, collections
from pathlib import Path
from kernelgraph.agent.loop import optimize
from kernelgraph.agent.backends.c import CBackend
from kernelgraph.agent.backends.timing import TimingPlan
from kernelgraph.agent.proposers.memoryless import MemorylessProposer
from kernelgraph.agent.targets import get_target
from kernelgraph.agent.tasks import get_task
from kernelgraph.core.models import RecordResult
class NoGraph:
    def upsert_targets(self, t): return []
    def record_attempt(self, a):
        ids=[uuid.uuid4().hex for _ in range(4)]
        return RecordResult(attempt_key="-", created=True, parent_kernel_id=ids[0], child_kernel_id=ids[1], parent_measurement_id=ids[2], child_measurement_id=ids[3])
    def retrieve(self,*a,**k): raise NotImplementedError
QUICK = TimingPlan(warmup=1, min_trials=5, max_trials=15, budget_s=0.4)
b = CBackend(cache_dir=Path(tempfile.mkdtemp()), check_timeout_s=4.0, timing=QUICK, counters=False)
t = get_target("cpu-x86-64-v2")
for rep in range(int(sys.argv[1])):
    r = optimize(get_task("matmul"), b, t, MemorylessProposer(seed=3), NoGraph(), budget=8, seed=3)
    print(rep, "attempts", r.attempts, "not_judged", r.not_judged, "speedup", round(r.speedup,2))
    for s in r.steps:
        print("  ", s.step, s.transform, s.outcome.value, s.judged, (s.diagnosis or "")[:300])
