import sys, time, statistics, os, signal, contextlib
import kernelgraph.agent.backends.isolated as iso
from kernelgraph.agent.backends.isolated import _threads_not_stopped
stats = []
def freeze(self):
    t0 = time.perf_counter_ns()
    stopped = set(); it = 0
    while True:
        pids = set(self.tree())
        for pid in pids - stopped:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGSTOP)
        stopped |= pids
        while True:
            it += 1
            running = [t for p in pids for t in _threads_not_stopped(p)]
            if not running: break
            time.sleep(SLEEP)
        if set(self.tree()) <= stopped:
            break
    stats.append((it, (time.perf_counter_ns() - t0) / 1e3))
    self.frozen = True
SLEEP = float(os.environ.get("SLEEP", "0.0002"))
iso.KernelServer.freeze = freeze
exec(open(__file__.replace("freeze_polls.py", "phases.py")).read().split("task = get_task")[0].replace("import kernelgraph.agent.backends.isolated as iso", ""))
from kernelgraph.agent.tasks import get_task
task = get_task(sys.argv[1]); label = sys.argv[2]
from kernelgraph.bench.configs import checked_configs
source = task.source("c", checked_configs(task)[label]); target = get_target("cpu-x86-64-v2")
import tempfile
with tempfile.TemporaryDirectory() as cache:
    b = CBackend(cache_dir=Path(cache), counters=False, timing=replace(BENCH_TIMING, protocol=ISOLATED))
    b.compile(task, source, target)
    for r in range(3):
        stats.clear(); t = time.perf_counter(); p = b.profile(task, source, target, parent_source=source); total = time.perf_counter() - t
    its = [s[0] for s in stats]; us = [s[1] for s in stats]
    print(SLEEP, f"profile {total*1e3:.0f} ms median {p.median_ns/1e3:.0f} us; freezes {len(stats)}: polls median {statistics.median(its)} max {max(its)}; us median {statistics.median(us):.0f} p90 {sorted(us)[int(.9*len(us))]:.0f}")
