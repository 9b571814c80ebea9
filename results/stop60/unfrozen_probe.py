"""Is it stopping and continuing the kernel's tree around every call (SIGSTOP/SIGCONT, which also
wake bubblewrap's init) that makes matmul best-A ~3% slower isolated? Arms rotating per repeat:
in-process; isolated as it is; isolated with `KernelServer.freeze` and `thaw` made no-ops (a probe
only: the tree is then never stopped, so a kernel could run between calls; the honest kernel here
does not), and the crowding check off (`QUIET_PAIRS`: the other child, never stopped, counts as
crowding). Evaluations as `kernelgraph bench sandbox` makes them, 30 trials.
Usage: python unfrozen_probe.py REPEATS task:config ..."""

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

real_freeze, real_thaw = isolated.KernelServer.freeze, isolated.KernelServer.thaw


def no_freeze(self):
    self.frozen, self._frozen_tree = True, self._walk()


def no_thaw(self, pids=None):
    self.frozen = False


ARMS = ("in-process", "isolated", "isolated-unfrozen")
base = replace(BENCH_TIMING, min_trials=30, max_trials=30)
target = get_target("cpu-x86-64-v2")
repeats = int(sys.argv[1])
with tempfile.TemporaryDirectory() as tmp:
    backends = {arm: CBackend(cache_dir=Path(tmp), counters=False,
                              timing=replace(base, protocol=IN_PROCESS if arm == "in-process" else ISOLATED))
                for arm in ARMS}
    orders = list(itertools.permutations(ARMS))
    for cell in sys.argv[2:]:
        name, label = cell.split(":")
        task = get_task(name)
        source = task.source("c", checked_configs(task)[label])
        runs = {arm: [] for arm in ARMS}
        for repeat in range(repeats):
            for arm in orders[repeat % len(orders)]:
                unfrozen = arm == "isolated-unfrozen"
                isolated.KernelServer.freeze = no_freeze if unfrozen else real_freeze
                isolated.KernelServer.thaw = no_thaw if unfrozen else real_thaw
                isolated.QUIET_PAIRS = not unfrozen  # unstopped, the other kernel's child counts as crowding
                try:
                    runs[arm].append(_evaluate_once(task, target, source, backends[arm])["median_ns"])
                except RuntimeError as exc:
                    print(f"  {arm}: {exc}"[:240], flush=True)
                    runs[arm].append(float("nan"))
                finally:
                    isolated.KernelServer.freeze, isolated.KernelServer.thaw = real_freeze, real_thaw
                    isolated.QUIET_PAIRS = True
        print(f"{name} {label}:", flush=True)
        for arm in ARMS:
            ratios = [v / r for v, r in zip(runs[arm], runs["in-process"])]
            print(f"  {arm:18s} median {statistics.median(runs[arm]) / 1e3:7.0f} us  paired over in-process {statistics.median(ratios):.3f}"
                  f"  [{' '.join(f'{x:.3f}' for x in ratios)}]", flush=True)
