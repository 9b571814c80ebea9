"""Is matmul best-A's ~3% slower isolated reading the kernel's own memory (its 360 KB scratch, malloc'd
per call; stack; code) staying in the core's private caches in-process and not isolated, where the
evaluator's own work between calls (its checks, the next call's variant) runs on the call's core?
tlb_probe's cold arm read 4 MB between flush and call in a plain harness and slowed matmul best-A
2.9%, layernorm best-A 3.6%; dropping only the translations (cold_translations_probe) did nothing.
Arms rotating per repeat: in-process and isolated as they are, and each with the prototype
`core_cache_filler` (agent/backends/_child.py: one byte per line of a buffer twice the L2, read on
the call's core after the flush). Evaluations as `kernelgraph bench sandbox` makes them, 30 trials.
The first run (fill_probe.out) had the four arms, the orders stepped by 5 of the 24. Fifth arm
(second run, fill_probe_cold.out, the orders stepped by 7 of the 120): in-process with the arrays' translations dropped too
(`translation_forgetter`: mprotect read-only then read-write), then filled.
Usage: python fill_probe.py REPEATS task:config ..."""

import itertools
import statistics
import sys
import tempfile
from dataclasses import dataclass, replace
from pathlib import Path

from kernelgraph.agent.backends import isolated
from kernelgraph.agent.backends.c import CBackend
from kernelgraph.agent.backends.timing import IN_PROCESS, ISOLATED, TimingPlan
from kernelgraph.agent.targets import get_target
from kernelgraph.agent.tasks import get_task
from kernelgraph.bench.configs import checked_configs
from kernelgraph.bench.sandbox import BENCH_TIMING, _evaluate_once


@dataclass(frozen=True)
class Filled(TimingPlan):
    def request(self):
        return {**super().request(), "fill_core_caches": True}


@dataclass(frozen=True)
class ColdAndFilled(TimingPlan):
    def request(self):
        return {**super().request(), "fill_core_caches": True, "cold_translations": True}


base = replace(BENCH_TIMING, min_trials=30, max_trials=30)
PLANS = {
    "in-process": replace(base, protocol=IN_PROCESS),
    "isolated": replace(base, protocol=ISOLATED),
    "in-process-filled": Filled(**{**base.__dict__, "protocol": IN_PROCESS}),
    "isolated-filled": replace(base, protocol=ISOLATED),
    "in-process-cold-tlb-filled": ColdAndFilled(**{**base.__dict__, "protocol": IN_PROCESS}),
}
target = get_target("cpu-x86-64-v2")
repeats = int(sys.argv[1])
with tempfile.TemporaryDirectory() as tmp:
    backends = {arm: CBackend(cache_dir=Path(tmp), counters=False, timing=plan) for arm, plan in PLANS.items()}
    orders = list(itertools.permutations(PLANS))  # 120: a stride of 7 walks them
    for cell in sys.argv[2:]:
        name, label = cell.split(":")
        task = get_task(name)
        source = task.source("c", checked_configs(task)[label])
        runs = {arm: [] for arm in PLANS}
        for repeat in range(repeats):
            for arm in orders[(repeat * 7) % len(orders)]:
                isolated.FILL_CORE_CACHES = arm == "isolated-filled"
                try:
                    runs[arm].append(_evaluate_once(task, target, source, backends[arm]))
                finally:
                    isolated.FILL_CORE_CACHES = False
        print(f"{name} {label}:", flush=True)
        for arm in PLANS:
            med = [r["median_ns"] for r in runs[arm]]
            ref = "in-process-filled" if arm.endswith("filled") else "in-process"
            if arm == "in-process-cold-tlb-filled":  # the isolated protocol over it
                arm_, ref = "isolated-filled", arm
                ratios = [v["median_ns"] / r["median_ns"] for v, r in zip(runs[arm_], runs[ref])]
                ref = f"it, isolated-filled over {arm}"
            else:
                ratios = [v["median_ns"] / r["median_ns"] for v, r in zip(runs[arm], runs[ref])]
            print(f"  {arm:18s} median {statistics.median(med) / 1e3:7.0f} us  rel.IQR {statistics.median(r['rel_iqr'] for r in runs[arm]):.3f}"
                  f"  paired over {ref}: {statistics.median(ratios):.3f}  [{' '.join(f'{x:.3f}' for x in ratios)}]", flush=True)
