"""Draw results/stop56/triangulate.json (warm: the caches as each harness leaves them) and, where it
exists, flushed/triangulate_flushed.json (cold: every line flushed before each call): each arm's median
of the repeats' ratios to the plain C harness of its run, per cell; the band is the cost goal's 2%."""

import json
import statistics
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt

here = Path(__file__).parent
panels = [("caches as each harness leaves them", here / "triangulate.json",
           [("isolated", "tab:blue"), ("in-process", "tab:orange"), ("plain-python", "tab:green")], "plain-c"),
          ("every line flushed before each call", here / "flushed" / "triangulate_flushed.json",
           [("isolated-flushed", "tab:blue"), ("plain-python-flushed", "tab:green")],
           "plain-c-flushed")]
panels = [p for p in panels if p[1].exists()]
fig, axes = plt.subplots(len(panels), 1, figsize=(11, 4.2 * len(panels)), squeeze=False)
for ax, (title, path, arms, reference) in zip(axes[:, 0], panels):
    runs = json.loads(path.read_text())
    cells = list(runs)
    for i, (arm, colour) in enumerate(arms):
        ratios = [statistics.median(a / c for a, c in zip(runs[cell][arm], runs[cell][reference])) for cell in cells]
        ax.scatter([k + (i - (len(arms) - 1) / 2) * 0.22 for k in range(len(cells))], ratios, color=colour, label=arm, zorder=3)
    ax.axhspan(0.98, 1.02, color="grey", alpha=0.25, label="within 2% of plain C")
    ax.axhline(1.0, color="black", lw=0.8)
    ax.set_xticks(range(len(cells)), [c.replace(":", "\n").replace("_chain", "_\nchain") for c in cells], fontsize=7)
    ax.set_ylabel(f"median ratio to {reference}")
    ax.set_title(f"{title}: serial honest kernels, 10 repeats, Intel Xeon guest (stop 56)", fontsize=10)
    ax.legend(fontsize=8, loc="upper left")
fig.tight_layout()
fig.savefig(here / "triangulate.png", dpi=110)
