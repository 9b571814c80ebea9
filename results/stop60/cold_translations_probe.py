"""Does the in-process protocol read kernels faster than the isolated one because its own cache
flush, run in the kernel's address space just before each call, leaves the arrays' translations in
the TLB (tlb_probe: cold translations cost matmul best-A 2.9%, layernorm best-A 3.6%)? Evaluations
as `kernelgraph bench sandbox` makes them (check + profile against itself, 30 trials), arms rotating
per repeat: isolated; in-process as it is; in-process with the arrays' translations dropped after
the flush (the prototype `translation_forgetter` of agent/backends/_child.py: mprotect read-only,
then read-write). Paired ratios of isolated over each.
Usage: python cold_translations_probe.py REPEATS task:config ..."""

import itertools
import statistics
import sys
import tempfile
from dataclasses import dataclass, replace
from pathlib import Path

from kernelgraph.agent.backends.c import CBackend
from kernelgraph.agent.backends.timing import IN_PROCESS, ISOLATED, TimingPlan
from kernelgraph.agent.targets import get_target
from kernelgraph.agent.tasks import get_task
from kernelgraph.bench.configs import checked_configs
from kernelgraph.bench.sandbox import BENCH_TIMING, _evaluate_once


@dataclass(frozen=True)
class ColdTranslations(TimingPlan):
    def request(self):
        return {**super().request(), "cold_translations": True}


base = replace(BENCH_TIMING, min_trials=30, max_trials=30)
PLANS = {
    "isolated": replace(base, protocol=ISOLATED),
    "in-process": replace(base, protocol=IN_PROCESS),
    "in-process-cold-tlb": ColdTranslations(**{**base.__dict__, "protocol": IN_PROCESS}),
}
target = get_target("cpu-x86-64-v2")
repeats = int(sys.argv[1])
with tempfile.TemporaryDirectory() as tmp:
    backends = {arm: CBackend(cache_dir=Path(tmp), counters=False, timing=plan) for arm, plan in PLANS.items()}
    orders = list(itertools.permutations(PLANS))
    for cell in sys.argv[2:]:
        name, label = cell.split(":")
        task = get_task(name)
        source = task.source("c", checked_configs(task)[label])
        runs = {arm: [] for arm in PLANS}
        for repeat in range(repeats):
            for arm in orders[repeat % len(orders)]:
                runs[arm].append(_evaluate_once(task, target, source, backends[arm]))
        print(f"{name} {label}:", flush=True)
        for arm in PLANS:
            med = [r["median_ns"] for r in runs[arm]]
            ratios = [i["median_ns"] / r["median_ns"] for i, r in zip(runs["isolated"], runs[arm])]
            print(f"  {arm:20s} median {statistics.median(med) / 1e3:7.0f} us  rel.IQR {statistics.median(r['rel_iqr'] for r in runs[arm]):.3f}"
                  f"  isolated over it, paired: {statistics.median(ratios):.3f}  [{' '.join(f'{x:.3f}' for x in ratios)}]", flush=True)
