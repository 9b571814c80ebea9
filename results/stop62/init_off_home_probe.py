"""Stop 62: does bubblewrap's init, continued and stopped with the kernel's child around every call
(and woken by its SIGCHLD), slow matmul best-A's isolated calls by running on the home CPU? Arms,
repeat-major, order rotated, 30 trials, ratios paired by repeat over in-process: the isolated
protocol as it is, and with every process of the sandbox but the kernel's placed off a serial
kernel's home CPU (`place` wrapped). Output: init_off_home_probe.out.
Usage: python init_off_home_probe.py REPEATS [task:config ...]"""

import contextlib
import os
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
from kernelgraph.bench.sandbox import BENCH_TIMING

ALLOWED = frozenset(os.sched_getaffinity(0))
place = isolated.KernelServer.place
moved: list[int] = []


def place_and_move_the_rest(server, cpus):
    place(server, cpus)
    others = (ALLOWED - cpus) or ALLOWED
    for pid in server.tree()[:-1]:
        for tid in os.listdir(f"/proc/{pid}/task"):
            with contextlib.suppress(ProcessLookupError):
                os.sched_setaffinity(int(tid), others)
                moved.append(int(tid))


ARMS = ("in-process", "isolated", "isolated-init-off-home")
base = replace(BENCH_TIMING, min_trials=30, max_trials=30)
target = get_target("cpu-x86-64-v2")
repeats = int(sys.argv[1])
cells = sys.argv[2:] or ["matmul:best-A"]
with tempfile.TemporaryDirectory() as tmp:
    backends = {arm: CBackend(cache_dir=Path(tmp), counters=False,
                              timing=replace(base, protocol=IN_PROCESS if arm == "in-process" else ISOLATED))
                for arm in ARMS}
    runs = {(c, arm): [] for c in cells for arm in ARMS}
    for repeat in range(repeats):
        order = list(ARMS)[repeat % len(ARMS):] + list(ARMS)[: repeat % len(ARMS)]
        for cell in cells:
            name, config = cell.split(":")
            task = get_task(name)
            src = task.source("c", checked_configs(task)[config])
            for arm in order:
                isolated.KernelServer.place = place_and_move_the_rest if arm.endswith("off-home") else place
                try:
                    prof = backends[arm].profile(task, src, target, parent_source=src)
                finally:
                    isolated.KernelServer.place = place
                runs[cell, arm].append(prof.median_ns if prof.judged else float("nan"))
    print(f"{repeats} repeats, load {os.getloadavg()[0]:.2f}, threads moved {len(set(moved))}", flush=True)
    for cell in cells:
        for arm in ARMS:
            ratios = [x / r for x, r in zip(runs[cell, arm], runs[cell, "in-process"])]
            print(f"{cell:16s} {arm:24s} {statistics.median(runs[cell, arm]) / 1e3:8.0f} us  over in-process "
                  f"{statistics.median(ratios):.3f}  [{' '.join(f'{x:.3f}' for x in ratios)}]", flush=True)
