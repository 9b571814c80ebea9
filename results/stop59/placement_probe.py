"""Stop 59: the hand-over's cost by where the evaluator and the child run: the child placed on CPU 0
(as `Placement` places a serial kernel), this process on CPU 0 (same) or CPU 1 (other), calibration
and calls alike. One line per trial: overhead (the serial stand-in's median) and the empty call's."""
import os
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, ".")
from kernelgraph.agent.backends import isolated  # noqa: E402
from kernelgraph.agent.targets import get_target  # noqa: E402
from kernelgraph.agent.tasks import get_task  # noqa: E402
from tests.agent.test_red_team import QUICK, _PastAdmissionC  # noqa: E402
import tests.agent.test_red_team as rt  # noqa: E402

trials = int(sys.argv[1]) if len(sys.argv) > 1 else 3
target = get_target("cpu-x86-64-v2")
backend = _PastAdmissionC(cache_dir=Path(tempfile.mkdtemp()), check_timeout_s=10.0,
                          memory_bytes=768 << 20, timing=QUICK, counters=False)
built = backend.compile(get_task("rmsnorm"), "void kernel(void) {}\n", target)
child_cpu = {0}
original = isolated.call_overhead


def placed(servers, deadline, prepare):
    for s in servers:
        s.place(frozenset(child_cpu))
    return original(servers, deadline, lambda *_: None)


rt.isolated.call_overhead = placed
for _ in range(trials):
    for where, cpus in (("same", {0}), ("other", {1}), ("free", {0, 1})):
        os.sched_setaffinity(0, cpus)
        with rt._calibrated_and_loaded(built.artifact, small=True, threads=1) as (server, deadline, cal):
            calls = sorted(server.call(deadline)[0] for _ in range(31))
        print(f"{where:>5} overhead {cal.cpu_ns:>8} empty median {calls[15]:>8} ratio {calls[15]/cal.cpu_ns:.2f}", flush=True)
