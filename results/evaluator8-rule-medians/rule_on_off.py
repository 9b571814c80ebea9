"""#26, stop 41: does evaluator 8's rule (QUIET_PAIRS) move the isolated protocol's medians? One cost-bench cell
(a task and a config label of `kernelgraph bench sandbox`) against itself, three isolated profiles (30 trials)
with the rule on, three off, three times in turn; prints the medians (us) and each profile's crowded pairs.
Run: python rule_on_off.py layernorm best-B (output.txt here, 2026-12-04 ~22:02 UTC, quiet)."""
import sys, tempfile, statistics
from pathlib import Path
from kernelgraph.agent.backends import isolated
from kernelgraph.agent.backends.c import CBackend
from kernelgraph.agent.backends.timing import TimingPlan, ISOLATED
from kernelgraph.agent.targets import get_target
from kernelgraph.agent.tasks import get_task
from kernelgraph.bench.sandbox import _cells
seen = []
orig = isolated._run
def run(*a, **k):
    r, c = orig(*a, **k)
    seen.append(r.extra.get("crowded_pairs"))
    return r, c
isolated._run = run
plan = TimingPlan(warmup=3, min_trials=30, max_trials=30, protocol=ISOLATED)
b = CBackend(cache_dir=Path(tempfile.mkdtemp()), check_timeout_s=10.0, memory_bytes=768<<20, counters=False, timing=plan)
t = get_target("cpu-x86-64-v2")
task_name, label = sys.argv[1], sys.argv[2]
cells = [c for c in _cells([task_name]) if c[1] == label]
task, _, src = cells[0]
for rule in (True, False, True, False, True, False):
    isolated.QUIET_PAIRS = rule
    meds = []
    for i in range(3):
        p = b.profile(task, src, t, parent_source=src)
        meds.append(p.median_ns)
    print(rule, [round(m/1e3) for m in meds], seen[-3:], flush=True)
