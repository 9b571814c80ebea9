"""The thirteenth adversary's case on real kernels, end to end through `loop.evaluate`: an identical copy
of rmsnorm's `slow_parent.c` (tests/agent/red_team) proposed over a parent that is the same code redoing
EXTRA% of its rows after the others (a parent EXTRA% slower as a parent, under the 15% mark), with the
parent's figure over the baseline taken as the loop takes a kept kernel's: its speed over the baseline
in a comparison it was kept in (here N comparisons of the code against an identical copy, three kernels,
one figure each, used in turn). Each (EXTRA, path) evaluated N times, the paths alternating:
`BASELINE_IN_THE_COMPARISON` on (the baseline timed beside) and off (a confirmation of its own).
Usage: PYTHONPATH=. python results/stop51/copies_real.py N EXTRA [EXTRA ...]"""
import collections
import statistics
import sys
import tempfile
from pathlib import Path

from kernelgraph.agent import loop
from kernelgraph.agent.backends.timing import FAST_TIMING
from kernelgraph.agent.results import Outcome
from kernelgraph.agent.targets import get_target
from kernelgraph.agent.tasks import get_task
from tests.agent.test_red_team import _no_peaks, _PastAdmissionC

task, target = get_task("rmsnorm"), _no_peaks(get_target("cpu-x86-64-v2"))
backend = _PastAdmissionC(cache_dir=Path(tempfile.mkdtemp()), check_timeout_s=10.0, memory_bytes=768 << 20,
                          counters=False, timing=FAST_TIMING)
honest = Path("tests/agent/red_team/slow_parent.c").read_text()
copy = honest.replace("void kernel(", "/* copy */\nvoid kernel(", 1)
baseline = task.source("c", task.baseline_config)
REDO = """
    for (int k = 0; k < r * KG_REDO_PCT / 100; k++) {  /* the parent's extra: rows done again */
        const float* xr = x + (size_t)k * (size_t)c;
        float* yr = y + (size_t)k * (size_t)c;
        float q = 0.0f;
        for (int j = 0; j < c; j++) q += xr[j] * xr[j];
        float inv = 1.0f / sqrtf(q / c + 1e-6f);
        for (int j = 0; j < c; j++) yr[j] = xr[j] * inv * w[j];
    }
    if (KG_SPIN_PCT > 0) {"""
n, extras = int(sys.argv[1]), [int(x) for x in sys.argv[2:]]
figures = []
for i in range(n):
    p = backend.profile(task, honest, target, parent_source=copy, reference_source=baseline)
    if p.outcome == Outcome.KEPT and p.judged:
        figures.append(statistics.median(p.reference_ratios))
print("figures", [round(f, 3) for f in figures], flush=True)
tally = collections.defaultdict(collections.Counter)
stored = collections.defaultdict(list)
for extra in extras:
    parent = honest.replace("#define KG_SPIN_PCT 0", f"#define KG_SPIN_PCT 0\n#define KG_REDO_PCT {extra}", 1)
    parent = parent.replace("    if (KG_SPIN_PCT > 0) {", REDO, 1)
    for i in range(n):
        for beside in ((True, False) if i % 2 == 0 else (False, True)):
            loop.BASELINE_IN_THE_COMPARISON = beside
            v = loop.evaluate(task, backend, target, honest, parent, baseline_source=baseline,
                              parent_over_baseline=figures[i % len(figures)])
            key = (extra, "beside" if beside else "apart")
            tally[key]["kept" if v.outcome == Outcome.KEPT else ("not judged" if not v.judged else "discarded")] += 1
            if v.outcome == Outcome.KEPT:
                stored[key].append(round(v.speedup or 0, 3))
            print(key, v.outcome.value, v.judged, round(v.speedup or 0, 3), v.reason[:220], flush=True)
for key in sorted(tally):
    print(key, dict(tally[key]), "stored", stored[key])
