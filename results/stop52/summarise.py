"""Per cell: the isolated protocol against in-process beside the null control (stop 52)."""
import json
import sys

from kernelgraph.bench.sandbox import judge

d = json.load(open(sys.argv[1]))
for c in d["cells"]:
    judge(c)
    n = c["null_control"]
    print(f"{c['task']:17s} {c['config']:8s} A/B wall {c['wall_ratio']:.3f} {c['wall_verdict'][:5]} iqr {c['rel_iqr_increase']:+.4f} {c['rel_iqr_verdict'][:5]} "
          f"med {c['median_ratio']:.3f} {c['median_verdict'][:5]} paired {c['paired_median_ratio']:.3f} {c['paired_verdicts']['median'][:5]} | "
          f"A/A wall {n['wall_ratio']:.3f} {n['wall_verdict'][:5]} iqr {n['rel_iqr_increase']:+.4f} {n['rel_iqr_verdict'][:5]} "
          f"med {n['median_ratio']:.3f} {n['median_verdict'][:5]} paired {n['paired_median_ratio']:.3f} {n['paired_verdicts']['median'][:5]}")
