"""Which part of the isolated protocol's time is larger than the in-process one's? Per evaluation (as
`kernelgraph bench sandbox` makes them: check + profile against itself, 30 trials), alternating
isolated and in-process: the isolated candidate's median as reported, and from its calls (every call
of both children, warm-up and stand-ins excluded by command) the median of the wall time until the
answer less the calibrated wall overhead, and of the CPU time less the CPU overhead.
Each line also gives the CPU time other tasks spent beside the calls (`call_others_ns`) and the CPUs
the calls ran on: added for the second run (clock_probe_others.out); clock_probe.out came before.
Usage: python clock_probe.py REPEATS task:config ..."""

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

calls, overheads = [], []
real_call, real_overhead = isolated.KernelServer.call, isolated.call_overhead


def recording_call(self, deadline, command=b"c"):
    elapsed, wall = real_call(self, deadline, command)
    if command == b"c":
        calls.append((elapsed, wall, self.call_cpu_ns, self.wall_bound, self.call_others_ns or 0, self.last_cpu()))
    return elapsed, wall


def recording_overhead(*args, **kwargs):
    got = real_overhead(*args, **kwargs)
    overheads.append(got)
    return got


isolated.KernelServer.call = recording_call
isolated.call_overhead = recording_overhead
target = get_target("cpu-x86-64-v2")
repeats = int(sys.argv[1])
with tempfile.TemporaryDirectory() as tmp:
    backends = {arm: CBackend(cache_dir=Path(tmp), counters=False,
                              timing=replace(BENCH_TIMING, min_trials=30, max_trials=30, protocol=arm))
                for arm in (ISOLATED, IN_PROCESS)}
    for cell in sys.argv[2:]:
        name, label = cell.split(":")
        task = get_task(name)
        source = task.source("c", checked_configs(task)[label])
        rows = []
        for repeat in range(repeats):
            order = (ISOLATED, IN_PROCESS) if repeat % 2 == 0 else (IN_PROCESS, ISOLATED)
            got = {}
            for arm in order:
                calls.clear(), overheads.clear()
                got[arm] = _evaluate_once(task, target, source, backends[arm])["median_ns"]
                if arm == ISOLATED:
                    timed = calls[-60:]  # the profile's last calls: its timed pairs (both children)
                    over = overheads[-1]
                    by_wall = statistics.median(w - over.wall_ns for _, w, *_ in timed)
                    by_cpu = statistics.median(c - over.cpu_ns for _, _, c, *_ in timed)
                    bound = sum(t[3] for t in timed)
                    others = sorted(t[4] for t in timed)
                    cpus = sorted(set(t[5] for t in timed), key=str)
            rows.append((got[ISOLATED], got[IN_PROCESS], by_wall, by_cpu, over.cpu_ns, over.wall_ns, bound))
            print(f"  isolated {got[ISOLATED]/1e3:7.0f} us  in-process {got[IN_PROCESS]/1e3:7.0f}  isolated by wall-overhead "
                  f"{by_wall/1e3:7.0f}  by cpu-overhead {by_cpu/1e3:7.0f}  overhead cpu/wall {over.cpu_ns/1e3:.0f}/{over.wall_ns/1e3:.0f} us"
                  f"  wall-bound calls {bound}/60  others' CPU per call median/max {others[30]/1e3:.0f}/{others[-1]/1e3:.0f} us on CPUs {cpus}", flush=True)
        med = lambda i: statistics.median(r[i] / r[1] for r in rows)
        print(f"{name} {label}: paired medians over in-process: isolated {med(0):.3f}, by wall {med(2):.3f}, by cpu {med(3):.3f}", flush=True)
