"""Two cost-bench runs side by side, per cell: the isolated protocol against in-process, each judged
by `kernelgraph.bench.sandbox.judge`, and the null control (in-process against itself) of each.
Run: .venv/bin/python results/stop58/compare_runs.py OLD.json NEW.json [OLD_LABEL NEW_LABEL]"""
import copy
import json
import sys
from collections import Counter

from kernelgraph.bench.sandbox import judge

old, new = (json.load(open(path)) for path in sys.argv[1:3])
labels = sys.argv[3:5] if len(sys.argv) > 4 else ["old", "new"]
cells = {(c["task"], c["config"]): c for c in old["cells"]}
goals = ("wall", "rel_iqr", "median")
tally = {(v, arm): {g: Counter() for g in goals} for v in labels for arm in ("isolated", "null")}
within = {v: 0 for v in labels}


def null_control(cell):
    """The cell with the second in-process evaluation in the isolated one's place."""
    twin = copy.deepcopy(cell)
    twin["runs"]["isolated"] = twin["runs"]["in-process-again"]
    judge(twin)
    return twin


a, b = labels
print(f"{'task':17s} {'config':8s}  {'median ' + a:>12s} {b:>7s}  {'rel.IQR ' + a:>12s} {b:>8s}  "
      f"{'null median ' + a:>16s} {b:>7s}  verdicts {a} | {b} (wall rel.IQR median)")
for c in new["cells"]:
    o = cells[(c["task"], c["config"])]
    for cell in (o, c):
        judge(cell)
    nulls = [null_control(cell) for cell in (o, c)]
    for version, cell, null in ((a, o, nulls[0]), (b, c, nulls[1])):
        within[version] += abs(cell["median_ratio"] - 1) <= 0.02
        for goal in goals:
            tally[(version, "isolated")][goal][cell[f"{goal}_verdict"]] += 1
            tally[(version, "null")][goal][null[f"{goal}_verdict"]] += 1
    print(f"{c['task']:17s} {c['config']:8s}  {o['median_ratio']:12.3f} {c['median_ratio']:7.3f}  "
          f"{o['rel_iqr_increase']:+12.4f} {c['rel_iqr_increase']:+8.4f}  {nulls[0]['median_ratio']:16.3f} "
          f"{nulls[1]['median_ratio']:7.3f}  {o['wall_verdict'][:5]} {o['rel_iqr_verdict'][:5]} {o['median_verdict'][:5]} | "
          f"{c['wall_verdict'][:5]} {c['rel_iqr_verdict'][:5]} {c['median_verdict'][:5]}")
for (version, arm), counts in tally.items():
    print(f"{version} {arm:8s}:", {goal: dict(sorted(n.items())) for goal, n in counts.items()})
print("median point estimates within 2%:", within)
