"""The cost bench at evaluator 17 (every call from the declared cold state; 20 repeats, null control)
beside stop 55's at evaluator 16 (warm; 20 repeats, null control), both on the Intel Xeon guest:
per cell, the isolated protocol against in-process, each judged by `kernelgraph.bench.sandbox.judge`.
Run: .venv/bin/python results/stop57/compare_warm_cold.py V16.json V17.json"""
import json
import sys
from collections import Counter

from kernelgraph.bench.sandbox import judge

old, new = (json.load(open(path)) for path in sys.argv[1:3])
cells = {(c["task"], c["config"]): c for c in old["cells"]}
tally: dict[str, dict[str, Counter[str]]] = {v: {g: Counter() for g in ("wall", "rel_iqr", "median")} for v in ("16", "17")}
print(f"{'task':17s} {'config':8s}  {'wall 16':>8s} {'17':>6s}  {'rel.IQR 16':>10s} {'17':>8s}  {'median 16':>9s} {'17':>6s}  verdicts 16 | 17 (wall rel.IQR median)")
for c in new["cells"]:
    judge(c)
    o = cells[(c["task"], c["config"])]
    judge(o)
    for version, cell in (("16", o), ("17", c)):
        for goal in tally[version]:
            tally[version][goal][cell[f"{goal}_verdict"]] += 1
    print(f"{c['task']:17s} {c['config']:8s}  {o['wall_ratio']:8.3f} {c['wall_ratio']:6.3f}  "
          f"{o['rel_iqr_increase']:+10.4f} {c['rel_iqr_increase']:+8.4f}  {o['median_ratio']:9.3f} "
          f"{c['median_ratio']:6.3f}  {o['wall_verdict'][:5]} {o['rel_iqr_verdict'][:5]} {o['median_verdict'][:5]} | "
          f"{c['wall_verdict'][:5]} {c['rel_iqr_verdict'][:5]} {c['median_verdict'][:5]}")
for version, goals in tally.items():
    print(f"evaluator {version}:", {goal: dict(counts) for goal, counts in goals.items()})
