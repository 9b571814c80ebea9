"""Stop 63: per arm, how many evaluations of a probe's output were in the slow state (median >= 2.5 ms).
Usage: python slow_counts.py PROBE.out ...   (handover_probe*.out, isolated_*_probe.out)"""

import re
import sys

SLOW_MS = 2.5
for path in sys.argv[1:]:
    rows = [{arm: float(ms) for arm, ms in re.findall(r"(\S+) (\d\.\d+)", line.split(":", 1)[1])}
            for line in open(path) if line.startswith("  repeat")]
    print(path, {arm: f"{sum(r[arm] >= SLOW_MS for r in rows)}/{len(rows)}" for arm in rows[0]})
