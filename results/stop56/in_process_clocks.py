"""The in-process protocol's wall times against its CPU time, per kernel, for honest cells.

The isolated protocol charges a serial kernel its CPU time; the in-process one reads the wall clock
(and records the process CPU time over the timed calls, `cpu_ns`). Where the wall sum exceeds the CPU
time, the old protocol's calls held time off the CPU. Usage: python in_process_clocks.py ROUNDS task:config ...
"""

import statistics
import sys
import tempfile
from dataclasses import replace
from pathlib import Path

import numpy as np

from kernelgraph.agent.backends.c import CBackend
from kernelgraph.agent.backends.sandbox import SharedObjectRunner
from kernelgraph.agent.backends.timing import IN_PROCESS
from kernelgraph.agent.backends.c import TIMING_SEED
from kernelgraph.agent.evaluator import DEFAULT_SEEDS, make_input_sets, output_specs
from kernelgraph.agent.targets import get_target
from kernelgraph.agent.tasks import get_task
from kernelgraph.bench.configs import checked_configs
from kernelgraph.bench.sandbox import BENCH_TIMING

target = get_target("cpu-x86-64-v3")
with tempfile.TemporaryDirectory() as tmp:
    backend = CBackend(cache_dir=Path(tmp), counters=False, timing=replace(BENCH_TIMING, protocol=IN_PROCESS))
    for cell in sys.argv[2:]:
        name, label = cell.split(":")
        task = get_task(name)
        built = backend.compile(task, task.source("c", checked_configs(task)[label]), target)
        sets = make_input_sets(task, (TIMING_SEED, *DEFAULT_SEEDS[:1]), small=False)
        specs, sizes = output_specs(task, sets[0]), list(task.sizes(sets[0]).values())
        for _ in range(int(sys.argv[1])):
            copies = [{k: v.copy() for k, v in s.items()} for s in sets]
            limits = backend._limits(target, backend.profile_timeout_s)
            report = SharedObjectRunner(built.artifact, sizes, limits).time(copies, specs, backend.timing, built.artifact)
            extra = report.extra
            for k in range(2):
                t = np.asarray(extra["times"][k], dtype=float)
                q1, med, q3 = np.percentile(t, [25, 50, 75])
                print(f"{name} {label} kernel {k}: wall median {med/1e6:6.2f} ms  rel.IQR {(q3-q1)/med:.3f}  "
                      f"min {t.min()/1e6:6.2f}  mean wall {t.mean()/1e6:6.2f}  mean CPU {extra['cpu_ns'][k]/len(t)/1e6:6.2f}",
                      flush=True)
