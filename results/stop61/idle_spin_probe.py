"""Stop 61: does the vCPUs' halting between (and around) calls make the isolated protocol's calls
slower? With an idle-priority busy loop on each CPU (SCHED_IDLE, `spin.c`, built to /tmp/p/spin:
`gcc -O1 spin.c -o /tmp/p/spin`), a vCPU never halts; the kernel preempts it at once. Arms rotating
per repeat: in-process and isolated, each without and with the spinners (QUIET_PAIRS off in the
spinning isolated arm: the spinners are other tasks' CPU). 30 trials, cpu-x86-64-v2.
Usage: python idle_spin_probe.py REPEATS task:config ...
Its one run (idle_spin_probe.out, matmul:best-A) stopped at once: beside the spinners the kernel's
child was not seen frozen within 15 s. Not pursued: gap.c answers the question without the evaluator."""

import os
import signal
import statistics
import subprocess
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

ARMS = ("in-process", "isolated", "in-process-spun", "isolated-spun")
spinners = [subprocess.Popen(["chrt", "--idle", "0", "taskset", "-c", str(cpu), "/tmp/p/spin"])
            for cpu in sorted(os.sched_getaffinity(0))]
for s in spinners:
    os.kill(s.pid, signal.SIGSTOP)
base = replace(BENCH_TIMING, min_trials=30, max_trials=30)
target = get_target("cpu-x86-64-v2")
repeats = int(sys.argv[1])
try:
    with tempfile.TemporaryDirectory() as tmp:
        backends = {arm: CBackend(cache_dir=Path(tmp), counters=False,
                                  timing=replace(base, protocol=ISOLATED if arm.startswith("isolated") else IN_PROCESS))
                    for arm in ARMS}
        cells = [tuple(c.split(":")) for c in sys.argv[2:]]
        runs = {(c, a): [] for c in cells for a in ARMS}
        for repeat in range(repeats):
            for name, label in cells:
                task = get_task(name)
                source = task.source("c", checked_configs(task)[label])
                for arm in ARMS[repeat % len(ARMS):] + ARMS[:repeat % len(ARMS)]:
                    spun = arm.endswith("spun")
                    for s in spinners:
                        os.kill(s.pid, signal.SIGCONT if spun else signal.SIGSTOP)
                    isolated.QUIET_PAIRS = not spun
                    try:
                        runs[(name, label), arm].append(_evaluate_once(task, target, source, backends[arm])["median_ns"])
                    finally:
                        isolated.QUIET_PAIRS = True
                        for s in spinners:
                            os.kill(s.pid, signal.SIGSTOP)
        for c in cells:
            print(f"{c[0]} {c[1]}:", flush=True)
            for arm, ref in (("isolated", "in-process"), ("in-process-spun", "in-process"), ("isolated-spun", "in-process-spun")):
                ratios = [v / r for v, r in zip(runs[c, arm], runs[c, ref])]
                print(f"  {arm:16s} median {statistics.median(runs[c, arm]) / 1e3:7.0f} us  paired over {ref:16s}"
                      f"{statistics.median(ratios):.3f}  [{' '.join(f'{x:.3f}' for x in ratios)}]", flush=True)
finally:
    for s in spinners:
        s.kill()
