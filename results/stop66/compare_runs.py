"""Stop 66: two `kernelgraph bench sandbox` runs cell by cell: each protocol's median (us), the
isolated excess over the in-process one, the median ratio with its interval and verdict, and each
run's goal counts (unpaired and paired by repeat).
Usage: python results/stop66/compare_runs.py BEFORE.json AFTER.json"""
import collections
import json
import statistics
import sys

runs = [json.load(open(path)) for path in sys.argv[1:3]]
versions = [run["evaluator_version"] for run in runs]
excess: list[list[float]] = [[], []]
for before, after in zip(runs[0]["cells"], runs[1]["cells"], strict=True):
    line = f"{before['task']:18} {before['config']:8}"
    for k, cell in enumerate((before, after)):
        iso, inp = (cell["medians"][arm]["median_ns"] / 1e3 for arm in ("isolated", "in-process"))
        excess[k].append(iso - inp)
        lo, hi = cell["median_ratio_ci"]
        line += (f" | {versions[k]}: iso {iso:9.1f} inp {inp:9.1f} ex {iso - inp:7.1f} "
                 f"x{cell['median_ratio']:.3f} [{lo:.3f}, {hi:.3f}] {cell['median_verdict']:10}")
    print(line)
print("median excess (us):", *(f"{versions[k]}: {statistics.median(excess[k]):.1f}" for k in range(2)))
for k, run in enumerate(runs):
    for prefix, key in (("", "{}_verdict"), ("paired ", None)):
        counts = {goal: collections.Counter(
            (cell["paired_verdicts"][goal] if key is None else cell[key.format(goal)]) for cell in run["cells"])
            for goal in ("wall", "rel_iqr", "median")}
        print(f"{versions[k]} {prefix}goals:", {g: dict(c) for g, c in counts.items()})
