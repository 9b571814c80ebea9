"""Timed calls charged far less than their kernel's median: every internal of the call."""
import sys, tempfile, time, numpy as np
from dataclasses import replace
from pathlib import Path
import kernelgraph.agent.backends.isolated as iso
from kernelgraph.agent.backends.c import CBackend
from kernelgraph.agent.backends.timing import ISOLATED
from kernelgraph.agent.targets import get_target
from kernelgraph.agent.tasks import get_task
from kernelgraph.bench.configs import checked_configs
from kernelgraph.bench.sandbox import BENCH_TIMING
log = []
orig_call = iso.KernelServer.call
def call(self, deadline, command=b"c"):
    pids = self.tree(); before = self.thread_cpu(pids); pb = self.process_cpu(pids)
    r = orig_call(self, deadline, command)
    after = self.tree(); pa = self.process_cpu(after); ta = self.thread_cpu(after)
    log.append(dict(server=id(self) % 1000, cmd=command, elapsed=r[0], answered=r[1], wall_bound=self.wall_bound,
                    total=pa - pb, threads={t: ta[t] - before.get(t, 0) for t in ta}, pids=(list(pids), list(after))))
    return r
iso.KernelServer.call = call
task = get_task(sys.argv[1]); label = sys.argv[2]
source = task.source("c", checked_configs(task)[label]); target = get_target("cpu-x86-64-v2")
with tempfile.TemporaryDirectory() as cache:
    b = CBackend(cache_dir=Path(cache), counters=False, timing=replace(BENCH_TIMING, protocol=ISOLATED))
    for r in range(int(sys.argv[3])):
        log.clear(); p = b.profile(task, source, target, parent_source=source)
        calls = [c for c in log if c["cmd"] == b"c"]
        med = np.median([c["elapsed"] for c in calls])
        odd = [c for c in calls if c["elapsed"] < 0.6 * med]
        print(f"profile {r}: median elapsed {med/1e3:.0f} us, {len(odd)} odd of {len(calls)}", flush=True)
        for c in odd:
            print("   ", {k: (v / 1e3 if isinstance(v, int) and k != "server" else v) for k, v in c.items()})
