"""Stop 63: which part of the isolated child puts matmul best-A in the slow state? The kernel runs in one
of two states on this host (about 2.3 and 2.65 ms a call); the isolated child ran in the slow one in
23 of 24, 9 of 10 and 13 of 16 evaluations, the in-process protocol and every plain-harness arm in
0-11 of 16-24 (handover_probe*.out, counted by slow_counts.py). Here the isolated protocol with one of its parts off at a time,
beside the default and the in-process protocol (30 trials; arm order rotated per repeat): the count of
evaluations in the slow state says which part it is. Output: isolated_toggles_probe.out.
Usage: python isolated_toggles_probe.py REPEATS task:config [ARM,ARM,...]   (as root)"""

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


class RandomLayout(Sandbox):
    """The sandbox with the child's address space randomised (`fixed_layout` ignored)."""

    def popen(self, *args, **kwargs):  # type: ignore[no-untyped-def]
        return super().popen(*args, **{**kwargs, "fixed_layout": False})


target = get_target("cpu-x86-64-v2")
# arm -> (protocol, sandbox, module flags set for its evaluations)
ARMS = {
    "isolated": (ISOLATED, Sandbox(), {}),
    "iso-with-clocks": (ISOLATED, Sandbox(), {"CLOCKLESS_KERNELS": False}),
    "iso-no-seccomp": (ISOLATED, Sandbox(seccomp=False), {}),
    "iso-unconfined": (ISOLATED, Sandbox(enabled=False), {}),
    "iso-writable-inputs": (ISOLATED, Sandbox(), {"READ_ONLY_INPUTS": False}),
    "iso-random-layout": (ISOLATED, RandomLayout(), {}),
    "in-process": (IN_PROCESS, Sandbox(), {}),
}
repeats, cell = int(sys.argv[1]), sys.argv[2]
if len(sys.argv) > 3:  # the arms to run, comma-separated
    ARMS = {arm: ARMS[arm] for arm in sys.argv[3].split(",")}
name, label = cell.split(":")
task = get_task(name)
source = task.source("c", checked_configs(task)[label])
runs: dict[str, list[float]] = {arm: [] for arm in ARMS}
with tempfile.TemporaryDirectory() as tmp:
    backends = {arm: CBackend(cache_dir=Path(tmp) / arm, counters=False, sandbox=sandbox,
                              timing=replace(BENCH_TIMING, protocol=protocol))
                for arm, (protocol, sandbox, _) in ARMS.items()}
    for repeat in range(repeats):
        order = list(ARMS)[repeat % len(ARMS):] + list(ARMS)[: repeat % len(ARMS)]
        for arm in order:
            flags = ARMS[arm][2]
            saved = {flag: getattr(isolated, flag) for flag in flags}
            for flag, value in flags.items():
                setattr(isolated, flag, value)
            try:
                runs[arm].append(_evaluate_once(task, target, source, backends[arm])["median_ns"] / 1e6)
            finally:
                for flag, value in saved.items():
                    setattr(isolated, flag, value)
        print(f"  repeat {repeat}: " + " ".join(f"{a} {runs[a][-1]:.3f}" for a in ARMS), flush=True)
print(f"{cell}: {repeats} repeats")
for arm, values in runs.items():
    slow = sum(v >= SLOW_MS for v in values)
    print(f"  {arm:20s} median {statistics.median(values):.3f} ms; slow state (>= {SLOW_MS} ms) in {slow} of {len(values)}")
