"""The stop-44 adversary's blind sandbag (a parent that spins 30% in the runs its coin chooses, one coin
per process) against copies of itself, as the loop would meet it: the parent's code first timed as
the candidate it was kept as (its median is the mark), then RUNS comparisons of a copy against it,
the mark lowered to the parent's median whenever a comparison timed it faster (agent/loop.py
PARENT_SLOWDOWN_MAX). Each comparison is judged twice on the same measurement: kept without the mark
(stop 44's rule) and kept with it. `python results/parent-mark-stop45/rates.py TRIALS RUNS [HEADS]`:
HEADS of 8 the coin's chance of spinning (4, a fair coin, by default)."""
import dataclasses, sys, tempfile
from pathlib import Path
from kernelgraph.agent import loop
from kernelgraph.agent.backends.c import CBackend
from kernelgraph.agent.backends.timing import ISOLATED, TimingPlan
from kernelgraph.agent.targets import get_target
from kernelgraph.agent.tasks import get_task

CBackend._admit = lambda self, *a, **k: []  # past admission: the timer alone (as stop 44's rates.py)
trials, runs = int(sys.argv[1]), int(sys.argv[2])
heads = int(sys.argv[3]) if len(sys.argv) > 3 else 4
source = (Path(__file__).parents[1] / "redteam-stop44" / "blind_sandbag_rmsnorm.c").read_text()
coin = "st->votes_parent = (start >> 12) & 1;"
assert coin in source
source = source.replace(coin, f"st->votes_parent = ((start >> 12) & 7) < {heads};")
timing = TimingPlan(warmup=1, min_trials=24, max_trials=24, budget_s=6.0, verified_calls=3, protocol=ISOLATED)
target = dataclasses.replace(get_target("cpu-x86-64-v2"), peak_gflops=None, peak_gbps=None)
task = get_task("rmsnorm")
baseline = task.source("c", task.baseline_config)
without = with_mark = judged = refused = 0
with tempfile.TemporaryDirectory() as cache:
    backend = CBackend(cache_dir=Path(cache), counters=False, timing=timing)
    for trial in range(trials):
        kept_as = backend.profile(task, source, target, parent_source=baseline)
        mark = kept_as.median_ns
        line = [f"trial {trial}: mark {mark / 1e3:.0f} us"]
        for run in range(runs):
            p = backend.profile(task, source, target, parent_source=source)
            if not p.judged or not p.paired_ratios:
                line.append("not judged (host)")
                continue
            judged += 1
            d = loop.keep_decision(p, lambda: None, keep_threshold=loop.DEFAULT_KEEP_THRESHOLD)
            slowed = loop._parent_slowed(p, mark)
            without += d.keep
            with_mark += d.keep and not slowed
            refused += d.keep and bool(slowed)
            line.append(f"{d.speedup:.3f}x parent {p.parent_median_ns / 1e3:.0f} us "
                        f"{'KEPT' if d.keep else 'not kept'}{' -> not judged (parent slowed)' if d.keep and slowed else ''}")
            if p.parent_median_ns:
                mark = min(mark, p.parent_median_ns)
        print(" | ".join(line), flush=True)
print(f"{judged} comparisons judged: kept {without} without the mark, {with_mark} with it ({refused} refused)")
