"""Stop 62: what parent_off_home_probe.py's evaluator-off-home arm changes. matmul best-A in the
isolated protocol, as it is and with the evaluator kept off a serial kernel's home CPU (the same
`place` wrapper), alternating, 30 trials: each run's median and the overhead it took off each call
by each clock (`call_overhead_ns`, `call_wall_overhead_ns`). Output: overhead_probe.out.
Usage: python overhead_probe.py REPEATS"""

import os
import sys
import tempfile
from dataclasses import replace
from pathlib import Path

from kernelgraph.agent.backends import isolated
from kernelgraph.agent.backends.c import CBackend
from kernelgraph.agent.backends.timing import ISOLATED
from kernelgraph.agent.targets import get_target
from kernelgraph.agent.tasks import get_task
from kernelgraph.bench.configs import checked_configs
from kernelgraph.bench.sandbox import BENCH_TIMING

ALLOWED = frozenset(os.sched_getaffinity(0))
place = isolated.KernelServer.place


def place_and_step_aside(server, cpus):
    place(server, cpus)
    os.sched_setaffinity(0, (ALLOWED - cpus) or ALLOWED)


task = get_task("matmul")
src = task.source("c", checked_configs(task)["best-A"])
with tempfile.TemporaryDirectory() as tmp:
    backend = CBackend(cache_dir=Path(tmp), counters=False,
                       timing=replace(BENCH_TIMING, min_trials=30, max_trials=30, protocol=ISOLATED))
    for _ in range(int(sys.argv[1])):
        for arm in ("as-is", "evaluator-off-home"):
            isolated.KernelServer.place = place_and_step_aside if arm != "as-is" else place
            try:
                prof = backend.profile(task, src, get_target("cpu-x86-64-v2"), parent_source=src)
            finally:
                isolated.KernelServer.place = place
                os.sched_setaffinity(0, ALLOWED)
            cpu, wall = (prof.counters.get(k, float("nan")) / 1e3 for k in ("call_overhead_ns", "call_wall_overhead_ns"))
            print(f"{arm:20s} median {prof.median_ns / 1e3:6.0f} us  overhead taken off: cpu {cpu:5.1f} us, "
                  f"wall {wall:5.1f} us  before it: {prof.median_ns / 1e3 + cpu:6.0f} us", flush=True)
