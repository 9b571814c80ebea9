"""Memoryless matmul runs of 8 steps (seed 3, the loop test's quick timing plan), N times with the baseline
timed beside a model-written parent (`BASELINE_IN_THE_COMPARISON`) and N times without, alternating:
each step's outcome, whether it was judged, and each run's wall time.
Usage: PYTHONPATH=. python results/stop51/unjudged_both.py N"""
import collections
import sys
import tempfile
import time
import uuid
from pathlib import Path

from kernelgraph.agent import loop
from kernelgraph.agent.backends.c import CBackend
from kernelgraph.agent.backends.timing import TimingPlan
from kernelgraph.agent.proposers.memoryless import MemorylessProposer
from kernelgraph.agent.targets import get_target
from kernelgraph.agent.tasks import get_task
from kernelgraph.core.models import RecordResult


class NoGraph:
    def upsert_targets(self, t):
        return []

    def record_attempt(self, a):
        ids = [uuid.uuid4().hex for _ in range(4)]
        return RecordResult(attempt_key="-", created=True, parent_kernel_id=ids[0], child_kernel_id=ids[1],
                            parent_measurement_id=ids[2], child_measurement_id=ids[3])


QUICK = TimingPlan(warmup=1, min_trials=5, max_trials=15, budget_s=0.4)
backend = CBackend(cache_dir=Path(tempfile.mkdtemp()), check_timeout_s=4.0, timing=QUICK, counters=False)
target = get_target("cpu-x86-64-v2")
totals = {True: collections.Counter(), False: collections.Counter()}
for rep in range(int(sys.argv[1])):
    for beside in ((True, False) if rep % 2 == 0 else (False, True)):
        loop.BASELINE_IN_THE_COMPARISON = beside
        start = time.perf_counter()
        r = loop.optimize(get_task("matmul"), backend, target, MemorylessProposer(seed=3), NoGraph(), budget=8, seed=3)
        wall = time.perf_counter() - start
        t = totals[beside]
        t["runs"] += 1
        t["steps"] += r.attempts
        t["not_judged"] += r.not_judged
        t["kept"] += sum(s.outcome.value == "kept" for s in r.steps)
        t["wall_s"] += wall
        print(rep, "beside" if beside else "apart", "attempts", r.attempts, "not_judged", r.not_judged,
              "speedup", round(r.speedup, 2), f"wall {wall:.1f} s", flush=True)
        for s in r.steps:
            print("  ", s.step, s.transform, s.outcome.value, s.judged, (s.diagnosis or "")[:300], flush=True)
for beside, t in totals.items():
    print("beside" if beside else "apart", dict(t), f"mean wall {t['wall_s'] / max(t['runs'], 1):.1f} s")
