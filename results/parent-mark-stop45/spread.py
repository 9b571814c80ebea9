"""How far an unspun parent's median moved within one trial of rates.py (the mark and the parents'
medians under 1650 us, a spin taking the code to about 1800-1950): `python results/parent-mark-stop45/spread.py`."""
import glob, re

worst = 0.0
for path in sorted(glob.glob("results/parent-mark-stop45/rates-*.log")):
    for line in open(path):
        if line.startswith("trial"):
            fast = [float(v) for v in re.findall(r"(?:mark|parent) (\d+) us", line) if float(v) < 1650]
            if len(fast) > 1:
                worst = max(worst, max(fast) / min(fast) - 1)
print(f"the most an unspun parent's median moved within a trial: {worst:.1%}")
