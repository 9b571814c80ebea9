"""The isolated protocol's charged times against its wall times (hand-over included), per kernel.

Usage: python isolated_clocks.py ROUNDS task:config ...
"""

import sys
import tempfile
from dataclasses import replace
from pathlib import Path

import numpy as np

from kernelgraph.agent.backends.c import TIMING_SEED, CBackend
from kernelgraph.agent.backends.isolated import time_isolated
from kernelgraph.agent.backends.timing import ISOLATED
from kernelgraph.agent.evaluator import DEFAULT_SEEDS, make_input_sets, output_specs
from kernelgraph.agent.targets import get_target
from kernelgraph.agent.tasks import get_task
from kernelgraph.bench.configs import checked_configs
from kernelgraph.bench.sandbox import BENCH_TIMING

target = get_target("cpu-x86-64-v3")
with tempfile.TemporaryDirectory() as tmp:
    backend = CBackend(cache_dir=Path(tmp), counters=False, timing=replace(BENCH_TIMING, protocol=ISOLATED))
    for cell in sys.argv[2:]:
        name, label = cell.split(":")
        task = get_task(name)
        built = backend.compile(task, task.source("c", checked_configs(task)[label]), target)
        sets = make_input_sets(task, (TIMING_SEED, *DEFAULT_SEEDS[:1]), small=False)
        specs, sizes = output_specs(task, sets[0]), list(task.sizes(sets[0]).values())
        for _ in range(int(sys.argv[1])):
            copies = [{k: v.copy() for k, v in s.items()} for s in sets]
            limits = backend._limits(target, backend.profile_timeout_s)
            report, verdict = time_isolated(task, copies, specs, sizes, backend.timing, [built.artifact] * 2, limits)
            extra = report.extra
            for k in range(2):
                t = np.asarray(extra["times"][k], dtype=float)
                w = np.asarray(extra["wall_times"][k], dtype=float)
                print(f"{name} {label} kernel {k}: charged median {np.median(t)/1e6:6.3f} ms  wall median "
                      f"{np.median(w)/1e6:6.3f} ms  overhead cpu {extra['call_overhead_ns']/1e3:.0f} us "
                      f"wall {extra['call_wall_overhead_ns']/1e3:.0f} us  {verdict.outcome.value}", flush=True)
