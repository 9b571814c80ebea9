"""The cost bench at evaluator 16 (the C child without clocks; 10 repeats, no null control) beside
stop 52's at evaluator 15 (20 repeats): per cell, the isolated protocol against in-process.
Run: .venv/bin/python results/stop53/compare_v15_v16.py V15.json V16.json"""
import json
import sys
from collections import Counter

from kernelgraph.bench.sandbox import judge

old, new = (json.load(open(path)) for path in sys.argv[1:3])
cells = {(c["task"], c["config"]): c for c in old["cells"]}
tally: dict[str, Counter[str]] = {"wall": Counter(), "rel_iqr": Counter(), "median": Counter()}
print(f"{'task':17s} {'config':8s}  {'wall v15':>9s} {'v16':>6s}  {'rel.IQR v15':>11s} {'v16':>8s}  {'median v15':>10s} {'v16':>6s}  v16 verdicts")
for c in new["cells"]:
    judge(c)
    o = cells.get((c["task"], c["config"]))
    if o is not None:
        judge(o)
    for goal in tally:
        tally[goal][c[f"{goal}_verdict"]] += 1
    f = (lambda x, k, fmt: format(x[k], fmt) if x is not None else "-")  # noqa: E731
    print(f"{c['task']:17s} {c['config']:8s}  {f(o, 'wall_ratio', '9.3f')} {c['wall_ratio']:6.3f}  "
          f"{f(o, 'rel_iqr_increase', '+11.4f')} {c['rel_iqr_increase']:+8.4f}  {f(o, 'median_ratio', '10.3f')} "
          f"{c['median_ratio']:6.3f}  {c['wall_verdict'][:5]} {c['rel_iqr_verdict'][:5]} {c['median_verdict'][:5]}")
for goal, counts in tally.items():
    print(goal, dict(counts))
