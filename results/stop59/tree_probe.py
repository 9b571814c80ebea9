"""Stop 59: which process of the sandbox's tree an empty call's CPU time goes to (the kernel's, or
bubblewrap's), call by call, the child placed on one CPU. Prints per call: the total and per pid."""
import os
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, ".")
from kernelgraph.agent.targets import get_target  # noqa: E402
from kernelgraph.agent.tasks import get_task  # noqa: E402
from tests.agent.test_red_team import QUICK, _calibrated_and_loaded, _PastAdmissionC  # noqa: E402

target = get_target("cpu-x86-64-v2")
backend = _PastAdmissionC(cache_dir=Path(tempfile.mkdtemp()), check_timeout_s=10.0,
                          memory_bytes=768 << 20, timing=QUICK, counters=False)
built = backend.compile(get_task("rmsnorm"), "void kernel(void) {}\n", target)
for trial in range(int(sys.argv[1]) if len(sys.argv) > 1 else 3):
    with _calibrated_and_loaded(built.artifact, small=True, threads=1) as (server, deadline, cal):
        pids = server.tree()
        kernel = server.kernel_pid()
        print("trial", trial, "overhead", cal.cpu_ns, "pids", pids, "kernel", kernel, flush=True)
        rows = []
        for _ in range(31):
            before = {p: server.process_cpu([p]) for p in pids}
            took, _ = server.call(deadline)
            rows.append((took, [server.process_cpu([p]) - before[p] for p in pids]))
        for took, per in sorted(rows)[::3]:
            print(f"  {took:>7} {per}", flush=True)
