"""A parallel kernel's threads, one CPU each (KernelServer.place) or free on every CPU (FREE=1, the
placement before stop 49): matmul's parallel config against the baseline and against itself, isolated
protocol, default timing plan. Usage: [FREE=1] python results/stop49/pinning.py ROUNDS [TASK]"""

import contextlib
import os
import statistics
import sys
import tempfile
from pathlib import Path

from kernelgraph.agent.backends import isolated
from kernelgraph.agent.backends.c import CBackend
from kernelgraph.agent.targets import get_target
from kernelgraph.agent.tasks import get_task

FREE = os.environ.get("FREE") == "1"
if FREE:

    def place(self: isolated.KernelServer, cpus: frozenset[int]) -> None:
        for tid in os.listdir(f"/proc/{self.kernel_pid()}/task"):
            with contextlib.suppress(ProcessLookupError):
                os.sched_setaffinity(int(tid), cpus)
        self.cpus = cpus

    isolated.KernelServer.place = place  # type: ignore[method-assign]

task = get_task(sys.argv[2] if len(sys.argv) > 2 else "matmul")
target = get_target("cpu-x86-64-v2")
backend = CBackend(cache_dir=Path(tempfile.mkdtemp()), check_timeout_s=8.0, counters=False)
base = dict(task.baseline_config)
serial = dict(base, order="ikj", simd=True, jam=2) if task.name == "matmul" else dict(base, simd=True)
parallel = dict(serial, parallel=True)
for rep in range(int(sys.argv[1])):
    for name, parent in (("baseline", base), ("serial", serial), ("itself", parallel)):
        p = backend.profile(task, task.source("c", parallel), target, parent_source=task.source("c", parent))
        paired = statistics.median(p.paired_ratios) if p.paired_ratios else float("nan")
        print(f"{'free' if FREE else 'pinned'} {task.name} round {rep} parallel vs {name:8s} "
              f"parallel {p.median_ns / 1e3:8.1f} us  parent {(p.parent_median_ns or 0) / 1e3:8.1f} us  "
              f"paired ratio {paired:6.3f}  judged {p.judged} {p.reason[:60] if not p.judged else ''}", flush=True)
