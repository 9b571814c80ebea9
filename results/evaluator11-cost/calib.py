"""Does the call-overhead calibration need 12 calls of 1 ms stand-ins? Same profiles, interleaved variants."""
import sys, time, statistics, tempfile, collections, json
from dataclasses import replace
from pathlib import Path
from kernelgraph.agent.backends import isolated as iso
from kernelgraph.agent.backends.c import CBackend
from kernelgraph.agent.backends.timing import ISOLATED
from kernelgraph.agent.targets import get_target
from kernelgraph.agent.tasks import get_task
from kernelgraph.bench.configs import checked_configs
from kernelgraph.bench.sandbox import BENCH_TIMING
got = []
orig = iso.call_overhead
def co(*a, **k):
    t = time.perf_counter(); r = orig(*a, **k); got.append((r, time.perf_counter() - t)); return r
iso.call_overhead = co
task_name, label, rounds = sys.argv[1], sys.argv[2], int(sys.argv[3])
variants = [(12, 1_000_000), (8, 500_000)]
task = get_task(task_name); target = get_target("cpu-x86-64-v2")
source = task.source("c", checked_configs(task)[label])
timing = replace(BENCH_TIMING, min_trials=30, max_trials=30, protocol=ISOLATED)
res = collections.defaultdict(list)
with tempfile.TemporaryDirectory() as tmp:
    backend = CBackend(cache_dir=Path(tmp), counters=False, timing=timing)
    backend.profile(task, source, target, parent_source=source)
    for r in range(rounds):
        for calls, ns in (variants if r % 2 == 0 else variants[::-1]):
            iso.OVERHEAD_CALLS, iso.STAND_IN_NS = calls, ns
            t = time.perf_counter(); p = backend.profile(task, source, target, parent_source=source); w = time.perf_counter() - t
            (ov, spent) = got[-1]
            res[(calls, ns)].append(dict(cpu=ov.cpu_ns, wall=ov.wall_ns, spent=spent, profile=w, median=p.median_ns, speedup=statistics.median(p.paired_ratios)))
for key, rows in res.items():
    f = lambda k: [x[k] for x in rows]
    print(key, " ".join(f"{k}: med {statistics.median(f(k)):.4g} [{min(f(k)):.4g}..{max(f(k)):.4g}]" for k in ("cpu", "wall", "spent", "profile", "median", "speedup")))
json.dump({str(k): v for k, v in res.items()}, open(f"calib-{task_name}-{label}.json", "w"))
