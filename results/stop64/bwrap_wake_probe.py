"""Stop 64: does waking bubblewrap's own processes on the other vCPU put matmul best-A in the slow state?
A trace of stop 63's isolated calls (/tmp/trace_*.txt, wakes.py) shows the other vCPU woken 2.1-3.2 times a
call, almost all for bwrap: its init and launcher are continued with the kernel at a call's start and
stopped at its end, then the vCPU halts again while the kernel runs. Arms: the isolated protocol as
shipped; the kernel's own process frozen and continued, bwrap's left running (`kernel-only`); bwrap's
processes stopped once after the load and held stopped until close (`bwrap-held`); unconfined; in-process.
Output: bwrap_wake_probe.out. Usage: python bwrap_wake_probe.py REPEATS task:config [ARM,...]   (as root)"""

import contextlib
import os
import signal
import statistics
import sys
import tempfile
from dataclasses import replace
from pathlib import Path

from kernelgraph.agent.backends import isolated
from kernelgraph.agent.backends.bubblewrap import Sandbox
from kernelgraph.agent.backends.c import CBackend
from kernelgraph.agent.backends.timing import IN_PROCESS, ISOLATED
from kernelgraph.agent.targets import get_target
from kernelgraph.agent.tasks import get_task
from kernelgraph.bench.configs import checked_configs
from kernelgraph.bench.sandbox import BENCH_TIMING, _evaluate_once

SLOW_MS = 2.5
real_walk, real_load, real_close = isolated.KernelServer._walk, isolated.KernelServer.load_kernel, isolated.KernelServer.close


def _comm(pid: int) -> str:
    try:
        return open(f"/proc/{pid}/comm").read().strip()
    except OSError:
        return ""


def kernel_only_walk(self):  # type: ignore[no-untyped-def]
    return [pid for pid in real_walk(self) if _comm(pid) != "bwrap"]


def held_load(self, deadline):  # type: ignore[no-untyped-def]
    real_load(self, deadline)
    self._held = [self.proc.pid, *(pid for pid in real_walk(self) if _comm(pid) == "bwrap")]
    for pid in self._held:
        os.kill(pid, signal.SIGSTOP)


def held_close(self):  # type: ignore[no-untyped-def]
    for pid in getattr(self, "_held", []):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGCONT)
    real_close(self)


PATCHES = {
    "kernel-only": {"_walk": kernel_only_walk},
    "bwrap-held": {"_walk": kernel_only_walk, "load_kernel": held_load, "close": held_close},
}
target = get_target("cpu-x86-64-v2")
ARMS = {
    "isolated": (ISOLATED, Sandbox()),
    "kernel-only": (ISOLATED, Sandbox()),
    "bwrap-held": (ISOLATED, Sandbox()),
    "iso-unconfined": (ISOLATED, Sandbox(enabled=False)),
    "in-process": (IN_PROCESS, Sandbox()),
}
repeats, cell = int(sys.argv[1]), sys.argv[2]
if len(sys.argv) > 3:
    ARMS = {arm: ARMS[arm] for arm in sys.argv[3].split(",")}
name, label = cell.split(":")
task = get_task(name)
source = task.source("c", checked_configs(task)[label])
runs: dict[str, list[float]] = {arm: [] for arm in ARMS}
with tempfile.TemporaryDirectory() as tmp:
    backends = {arm: CBackend(cache_dir=Path(tmp) / arm, counters=False, sandbox=sandbox,
                              timing=replace(BENCH_TIMING, protocol=protocol))
                for arm, (protocol, sandbox) in ARMS.items()}
    for repeat in range(repeats):
        order = list(ARMS)[repeat % len(ARMS):] + list(ARMS)[: repeat % len(ARMS)]
        for arm in order:
            patches = PATCHES.get(arm, {})
            for attr, fn in patches.items():
                setattr(isolated.KernelServer, attr, fn)
            try:
                result = _evaluate_once(task, target, source, backends[arm])
                runs[arm].append(result["median_ns"] / 1e6)
            finally:
                isolated.KernelServer._walk, isolated.KernelServer.load_kernel, isolated.KernelServer.close = real_walk, real_load, real_close
        print(f"  repeat {repeat}: " + " ".join(f"{a} {runs[a][-1]:.3f}" for a in ARMS), flush=True)
print(f"{cell}: {repeats} repeats")
for arm, values in runs.items():
    slow = sum(v >= SLOW_MS for v in values)
    print(f"  {arm:20s} median {statistics.median(values):.3f} ms; slow state (>= {SLOW_MS} ms) in {slow} of {len(values)}")
