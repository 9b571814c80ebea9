"""The `kernelgraph` CLI unchanged, with every CBackend.profile call's figures logged to stderr
(which kernel against which, medians, their ratio), so the confirmations' figures can be read.
Nothing in the evaluation changes: the wrapper only reads the returned ProfileResult."""
import hashlib, sys
from kernelgraph.agent.backends.c import CBackend

_orig = CBackend.profile
def _label(src):
    if src is None: return "-"
    for line in src.splitlines()[:3]:
        if line.startswith("#define KG_GEN"): return "gen" + line.split()[-1] + ":" + hashlib.sha1(src.encode()).hexdigest()[:6]
    return "other:" + hashlib.sha1(src.encode()).hexdigest()[:6]
def profile(self, task, source, target, *a, parent_source=None, **k):
    r = _orig(self, task, source, target, *a, parent_source=parent_source, **k)
    ratio = (r.parent_median_ns / r.median_ns) if r.parent_median_ns and r.median_ns else float("nan")
    print(f"PROFILE {_label(source)} vs {_label(parent_source)}: outcome={r.outcome.value} judged={r.judged} "
          f"median={r.median_ns/1e3:.1f}us other={(r.parent_median_ns or 0)/1e3:.1f}us other/median={ratio:.3f} pairs={len(r.paired_ratios or [])}", file=sys.stderr, flush=True)
    return r
CBackend.profile = profile
from kernelgraph.cli import main
sys.argv[0] = "kernelgraph"
sys.exit(main())
