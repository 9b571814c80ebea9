"""Draw results/stop56/triangulate.json: each arm's median over the repeats, relative to the plain C
harness's, per cell (the band: the cost goal's 2%)."""

import json
import statistics
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt

here = Path(__file__).parent
runs = json.loads((here / "triangulate.json").read_text())
arms = [("isolated", "tab:blue"), ("in-process", "tab:orange"), ("plain-python", "tab:green")]
cells = list(runs)
fig, ax = plt.subplots(figsize=(11, 4.5))
for i, (arm, colour) in enumerate(arms):
    ratios = [statistics.median(a / c for a, c in zip(runs[cell][arm], runs[cell]["plain-c"])) for cell in cells]
    ax.scatter([k + (i - 1) * 0.22 for k in range(len(cells))], ratios, color=colour, label=arm, zorder=3)
ax.axhspan(0.98, 1.02, color="grey", alpha=0.25, label="within 2% of plain C")
ax.axhline(1.0, color="black", lw=0.8)
ax.set_xticks(range(len(cells)), [c.replace(":", "\n").replace("_chain", "_\nchain") for c in cells], fontsize=7)
ax.set_ylabel("median of the repeats' ratios to plain C")
ax.set_title("Serial honest kernels, 10 repeats, Intel Xeon guest (stop 56): both protocols and two plain harnesses")
ax.legend(fontsize=8, loc="upper left")
fig.tight_layout()
fig.savefig(here / "triangulate.png", dpi=110)
