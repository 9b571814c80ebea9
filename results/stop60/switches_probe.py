"""Which of the isolated child's conditions makes matmul best-A ~3% slower than in-process (plain C
and plain Python harnesses agree with in-process: triangulate.out)? Arms rotating per repeat:
in-process; isolated as it is; isolated with the clocks left on (`CLOCKLESS_KERNELS` off: no TSC
fault, vDSO mapped, no clock filter, nothing forgotten); isolated with writable inputs
(`READ_ONLY_INPUTS` off). Evaluations as `kernelgraph bench sandbox` makes them, 30 trials.
Usage: python switches_probe.py REPEATS task:config ..."""

import itertools
import statistics
import sys
import tempfile
from dataclasses import replace
from pathlib import Path

from kernelgraph.agent.backends import isolated
from kernelgraph.agent.backends.c import CBackend
from kernelgraph.agent.backends.timing import IN_PROCESS, ISOLATED
from kernelgraph.agent.targets import get_target
from kernelgraph.agent.tasks import get_task
from kernelgraph.bench.configs import checked_configs
from kernelgraph.bench.sandbox import BENCH_TIMING, _evaluate_once

SWITCHES = {"in-process": {}, "isolated": {}, "isolated-clocks-on": {"CLOCKLESS_KERNELS": False},
            "isolated-writable-inputs": {"READ_ONLY_INPUTS": False}}
base = replace(BENCH_TIMING, min_trials=30, max_trials=30)
target = get_target("cpu-x86-64-v2")
repeats = int(sys.argv[1])
with tempfile.TemporaryDirectory() as tmp:
    backends = {arm: CBackend(cache_dir=Path(tmp), counters=False,
                              timing=replace(base, protocol=IN_PROCESS if arm == "in-process" else ISOLATED))
                for arm in SWITCHES}
    orders = list(itertools.permutations(SWITCHES))
    for cell in sys.argv[2:]:
        name, label = cell.split(":")
        task = get_task(name)
        source = task.source("c", checked_configs(task)[label])
        runs = {arm: [] for arm in SWITCHES}
        for repeat in range(repeats):
            for arm in orders[(repeat * 5) % len(orders)]:
                saved = {k: getattr(isolated, k) for k in SWITCHES[arm]}
                for k, v in SWITCHES[arm].items():
                    setattr(isolated, k, v)
                try:
                    runs[arm].append(_evaluate_once(task, target, source, backends[arm])["median_ns"])
                finally:
                    for k, v in saved.items():
                        setattr(isolated, k, v)
        print(f"{name} {label}:", flush=True)
        for arm in SWITCHES:
            ratios = [v / r for v, r in zip(runs[arm], runs["in-process"])]
            print(f"  {arm:26s} median {statistics.median(runs[arm]) / 1e3:7.0f} us  paired over in-process {statistics.median(ratios):.3f}"
                  f"  [{' '.join(f'{x:.3f}' for x in ratios)}]", flush=True)
