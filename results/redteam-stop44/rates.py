"""How often the stop-44 kernels, compared with themselves, are kept (the isolated protocol, past
admission, rmsnorm, 24 pairs, as tests/agent/test_red_team.py's role test), per order rule:
`python results/redteam-stop44/rates.py RUNS KERNEL.c [fixed]`."""
import dataclasses, statistics, sys, tempfile
from pathlib import Path
from kernelgraph.agent.backends import isolated
from kernelgraph.agent.backends.c import CBackend
from kernelgraph.agent.backends.timing import ISOLATED, TimingPlan
from kernelgraph.agent.loop import keep_decision
from kernelgraph.agent.targets import get_target
from kernelgraph.agent.tasks import get_task

CBackend._admit = lambda self, *a, **k: []  # past admission: the timer alone
if "fixed" in sys.argv[3:]:
    isolated.RANDOM_PAIR_ORDER = False
runs, source = int(sys.argv[1]), Path(sys.argv[2]).read_text()
timing = TimingPlan(warmup=1, min_trials=24, max_trials=24, budget_s=6.0, verified_calls=3, protocol=ISOLATED)
target = dataclasses.replace(get_target("cpu-x86-64-v2"), peak_gflops=None, peak_gbps=None)
kept, speedups = 0, []
with tempfile.TemporaryDirectory() as cache:
    backend = CBackend(cache_dir=Path(cache), counters=False, timing=timing)
    for run in range(runs):
        p = backend.profile(get_task("rmsnorm"), source, target, parent_source=source)
        if not p.judged or not p.paired_ratios:
            print(run, "not judged / failed:", p.reason, flush=True)
            continue
        d = keep_decision(p, lambda: None, keep_threshold=0.02)
        kept += d.keep
        speedups.append(d.speedup)
        print(run, f"{'KEPT' if d.keep else 'not kept'} {d.speedup:.3f} [{d.low:.3f}, {d.high:.3f}]", flush=True)
print(f"kept {kept} of {len(speedups)}; speedups {sorted(round(s, 3) for s in speedups)}")
