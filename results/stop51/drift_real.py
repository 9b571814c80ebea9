"""How much a kernel's median moves within one interleaved comparison of three kernels, and between
comparisons, on real kernels (the model of results/stop51/model/ draws it; this measures it).

rmsnorm: `slow_parent.c` (tests/agent/red_team) as candidate, the same code spinning EXTRA% more as the
parent, the task's baseline as the third kernel; N comparisons at the loop's default timing plan
(`FAST_TIMING`), alternating with N comparisons of the unspun code against an identical copy (the
"kept" comparisons: each gives a figure F_i, the candidate's median speed over the baseline). Then
every copy comparison j is decided by `loop._decide_beside_baseline` against every figure F_i, no
re-measurement (one measurement each): the rate an identical copy (over a parent EXTRA% slower) is
kept, on real medians. Usage: PYTHONPATH=. python results/stop51/drift_real.py N EXTRA [EXTRA ...]"""
import statistics
import sys
import tempfile
from pathlib import Path

from kernelgraph.agent import loop
from kernelgraph.agent.backends.timing import FAST_TIMING
from kernelgraph.agent.results import Evaluation, Outcome
from kernelgraph.agent.targets import get_target
from kernelgraph.agent.tasks import get_task
from tests.agent.test_red_team import _PastAdmissionC, _no_peaks

task, target = get_task("rmsnorm"), _no_peaks(get_target("cpu-x86-64-v2"))
backend = _PastAdmissionC(cache_dir=Path(tempfile.mkdtemp()), check_timeout_s=10.0, memory_bytes=768 << 20,
                          counters=False, timing=FAST_TIMING)
honest = Path("tests/agent/red_team/slow_parent.c").read_text()
copy = honest.replace("void kernel(", "/* copy */\nvoid kernel(", 1)
baseline = task.source("c", task.baseline_config)
n, extras = int(sys.argv[1]), [int(x) for x in sys.argv[2:]]


def med(xs):
    return statistics.median(xs)


figures, self_gains = [], []
copies: dict[int, list] = {e: [] for e in extras}
for i in range(n):
    kept = backend.profile(task, honest, target, parent_source=copy, reference_source=baseline)
    if kept.outcome == Outcome.KEPT and kept.judged:
        figures.append(med(kept.reference_ratios))
        self_gains.append(med(kept.paired_ratios))
    for extra in extras:
        parent = honest.replace("#define KG_SPIN_PCT 0", f"#define KG_SPIN_PCT {extra}", 1)
        p = backend.profile(task, honest, target, parent_source=parent, reference_source=baseline)
        if p.outcome == Outcome.KEPT and p.judged:
            copies[extra].append(p)
    print(i, "figure", round(figures[-1], 4) if figures else None, "self-gain", round(self_gains[-1], 4) if self_gains else None,
          {e: (round(med(c[-1].paired_ratios), 4), round(med(c[-1].reference_ratios), 4)) for e, c in copies.items() if c}, flush=True)


def spread(xs):
    m = med(xs)
    return f"median {m:.4f}, min {min(xs):.4f}, max {max(xs):.4f}, sd/median {statistics.pstdev(xs) / m:.4f}"


print("identical code in one comparison, gain medians (per-kernel drift within a comparison):", spread(self_gains))
print("figures F_i (candidate over baseline, between comparisons):", spread(figures))
for extra, profiles in copies.items():
    gains = [med(p.paired_ratios) for p in profiles]
    speeds = [med(p.reference_ratios) for p in profiles]
    print(f"parent +{extra}%: gain medians", spread(gains), "| speed medians", spread(speeds))
    keeps = judged_off = 0
    stored = []
    for p in profiles:
        for f in figures:
            first = Evaluation(Outcome.KEPT, "", p)
            loop.MAX_MEASUREMENTS, saved = 1, loop.MAX_MEASUREMENTS
            try:
                v = loop._decide_beside_baseline(first, task, backend, target, honest, "", baseline, f, 0.02)
            finally:
                loop.MAX_MEASUREMENTS = saved
            keeps += v.outcome == Outcome.KEPT
            judged_off += not v.judged
            if v.outcome == Outcome.KEPT:
                stored.append(v.speedup)
    total = len(profiles) * len(figures)
    print(f"parent +{extra}%: identical copy kept in {keeps} of {total} (comparison, figure) pairs, not judged {judged_off}"
          + (f", stored {min(stored):.3f}-{max(stored):.3f}" if stored else ""), flush=True)
