"""Re-judge a rates.py log at other PARENT_SLOWDOWN_MAX values, on the same measurements: each
comparison's parent median against the mark as it stood then (the mark lowered after each, as the
loop does). `python results/parent-mark-stop45/rejudge.py LOG [SHARE ...]`."""
import re, sys

for share in [float(x) for x in sys.argv[2:]] or [0.15, 0.20]:
    kept_without = kept_with = 0
    for line in open(sys.argv[1]):
        if not line.startswith("trial"):
            continue
        parts = line.strip().split(" | ")
        mark = float(re.search(r"mark (\d+) us", parts[0]).group(1))
        for part in parts[1:]:
            m = re.search(r"([\d.]+)x parent (\d+) us (KEPT|not kept)", part)
            if not m:
                continue
            parent, kept = float(m.group(2)), m.group(3) == "KEPT"
            kept_without += kept
            kept_with += kept and parent <= mark * (1 + share)
            mark = min(mark, parent)
    print(f"{sys.argv[1]} at {share:.0%}: kept {kept_without} without the mark, {kept_with} with it")
