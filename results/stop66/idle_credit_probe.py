"""Stop 66: the prototype of test_a_kernels_idle_thread_is_not_charged_the_hand_over_it_adds. The
same 0.2 ms of serial work with and without an idle OpenMP worker (its team started on the first
call), called in turns in two fresh children given 2 cores; per pair of children: the calibrated
cost of one idle thread, the worker's kernel less the other by the medians the verdict uses, and
the same with no idle credit (what evaluator 23 charged).
Usage: python results/stop66/idle_credit_probe.py REPEATS   (from the repository root, as root)"""

import contextlib
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, ".")
from kernelgraph.agent.targets import get_target  # noqa: E402
from kernelgraph.agent.tasks import get_task  # noqa: E402
from tests.agent.test_red_team import (  # noqa: E402
    _SERIAL_WORK,
    _WORK_BESIDE_AN_IDLE_WORKER,
    QUICK,
    _calibrated_and_loaded,
    _PastAdmissionC,
)

backend = _PastAdmissionC(
    cache_dir=Path(tempfile.mkdtemp()),
    check_timeout_s=10.0,
    memory_bytes=768 << 20,
    timing=QUICK,
    counters=False,
)
target = get_target("cpu-x86-64-v2")
sources = (_WORK_BESIDE_AN_IDLE_WORKER, _SERIAL_WORK + "void kernel(void) { work(); }\n")
artifacts = [backend.compile(get_task("rmsnorm"), source, target).artifact for source in sources]
for _ in range(int(sys.argv[1])):
    with contextlib.ExitStack() as stack:
        children = [stack.enter_context(_calibrated_and_loaded(a, small=True, threads=2)) for a in artifacts]
        for server, deadline, _ in children:
            server.call(deadline)  # the first: the team starts
        credited: list[list[int]] = [[], []]
        uncredited: list[list[int]] = [[], []]
        for _ in range(31):
            for k, (server, deadline, calibrated) in enumerate(children):
                ns, _ = server.call(deadline)
                credited[k].append(calibrated.off(ns, server.wall_bound, server.call_threads))
                uncredited[k].append(calibrated.off(ns, server.wall_bound, calibrated.threads))
    left = statistics.median(credited[0]) - statistics.median(credited[1])
    cost = statistics.median(uncredited[0]) - statistics.median(uncredited[1])
    print(
        f"idle thread cpu {children[0][2].idle_thread_cpu_ns / 1e3:5.1f} us | worker less serial: "
        f"credited {left / 1e3:+6.1f} us, uncredited (evaluator 23) {cost / 1e3:+6.1f} us",
        flush=True,
    )
