"""How often the study's timing landscapes recorded the hypervisor's steal (each point's `steal_share`,
kernelgraph/bench/study/measurement.py): `python results/ci-stop45/study_steal.py`."""
import glob, json

points = with_steal = over_5pct = 0
most = 0.0
for path in glob.glob("results/study-v3/landscapes/*/*/*.jsonl"):
    for line in open(path):
        point = json.loads(line)
        if "steal_share" not in point:
            continue
        share = point["steal_share"] or 0.0
        points += 1
        with_steal += share > 0
        over_5pct += share > 0.05
        most = max(most, share)
print(f"{points} points: steal in {with_steal}, over 5% in {over_5pct}, at most {most:.1%}")
