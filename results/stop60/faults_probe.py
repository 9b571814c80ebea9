"""Page faults per timed call of the isolated child (its /proc/PID/stat minflt and majflt, read
before and after each kernel call by the evaluator), for kernels that allocate per call (matmul
best-A mallocs a transposed copy of b each call) and one that does not.
Usage: python faults_probe.py task:config ..."""

import statistics
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
from kernelgraph.bench.sandbox import BENCH_TIMING, _evaluate_once

faults = []
real_call = isolated.KernelServer.call


def minflt(pids):
    total = 0
    for pid in pids:
        try:
            fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
            total += int(fields[7])  # minflt (field 10)
        except OSError:
            pass
    return total


def recording_call(self, deadline, command=b"c"):
    pids = self.tree()
    before = minflt(pids)
    got = real_call(self, deadline, command)
    if command == b"c":
        faults.append(minflt(pids) - before)
    return got


isolated.KernelServer.call = recording_call
target = get_target("cpu-x86-64-v2")
with tempfile.TemporaryDirectory() as tmp:
    backend = CBackend(cache_dir=Path(tmp), counters=False,
                       timing=replace(BENCH_TIMING, min_trials=30, max_trials=30, protocol=ISOLATED))
    for cell in sys.argv[1:]:
        name, label = cell.split(":")
        task = get_task(name)
        source = task.source("c", checked_configs(task)[label])
        faults.clear()
        _evaluate_once(task, target, source, backend)
        timed = faults[-60:]
        print(f"{name} {label}: minor faults per call, the profile's last 60 calls: median {statistics.median(timed)}, "
              f"max {max(timed)}, first calls of the evaluation {faults[:8]}", flush=True)
