"""Stop 67 (run at evaluator 24; HOLD=1 prototypes the hold that evaluator 25 tried and stop 67 backed
out): where is the isolated protocol's uncalibrated excess in a serial call? inner_clock_probe.py
found layernorm best-A charged about 12 us a call more than its own work took in the isolated child (its inner time-stamp-counter reading), where the in-process protocol's figure equals the inner one.

Same wrapped kernel (the counter read around the real kernel, ticks to stderr; clocks left to the
kernel), evaluated as the bench does. Every `KernelServer.call` is recorded: the command, what it
measured (its raw charge before the overhead comes off), the tree's CPU time, the wall time until the
answer, and for stand-ins their own CPU time. Per child: the stand-ins' raw excess (charge - own
CPU: the overhead the calibration takes off), the kernel calls' raw excess (charge - inner time), and
the calibrated overhead itself.
Usage: python results/stop67/handover_split_probe.py REPEATS task:config   (repo root, as root)"""

import contextlib
import re
import statistics
import sys
import tempfile
from collections import defaultdict
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, ".")
from kernelgraph.agent.backends import isolated  # noqa: E402
from kernelgraph.agent.backends.timing import ISOLATED  # noqa: E402
from kernelgraph.agent.targets import get_target  # noqa: E402
from kernelgraph.bench.sandbox import BENCH_TIMING  # noqa: E402
from results.stop67.inner_clock_probe_lib import wrapped_source  # noqa: E402
from tests.agent.test_red_team import _PastAdmissionC  # noqa: E402

TSC_GHZ = float(sys.argv[3]) if len(sys.argv) > 3 else 2.546
calls: dict[int, list[tuple]] = defaultdict(list)
logs: dict[int, bytes] = {}
overheads: list[isolated.CallOverhead] = []
_call, _close, _overhead = isolated.KernelServer.call, isolated.KernelServer.close, isolated.call_overhead


beside_idle = {"now": False}
_idle = isolated.KernelServer.idle_threads


def idle_threads(self, deadline, start):  # type: ignore[no-untyped-def]
    beside_idle["now"] = start
    return _idle(self, deadline, start)


isolated.KernelServer.idle_threads = idle_threads


_process_cpu = isolated.KernelServer.process_cpu
readings: list[int] = []


def process_cpu(self, pids):  # type: ignore[no-untyped-def]
    found = _process_cpu(self, pids)
    if list(pids) != [self.proc.pid]:  # the tree's (before the call, at the answer, stopped), not ours
        readings.append(found)
    return found


isolated.KernelServer.process_cpu = process_cpu
_thread_cpu = isolated.KernelServer.thread_cpu
thread_readings: list[dict[int, int]] = []


def thread_cpu(self, pids=None):  # type: ignore[no-untyped-def]
    found = _thread_cpu(self, pids)
    thread_readings.append(found)
    return found


isolated.KernelServer.thread_cpu = thread_cpu


def call(self, deadline, command=b"c"):  # type: ignore[no-untyped-def]
    readings.clear()
    thread_readings.clear()
    elapsed, answered = _call(self, deadline, command)
    first, last = thread_readings[0], thread_readings[-1]
    per_thread = tuple(last[t] - first.get(t, 0) for t in sorted(last))  # the tree's threads in tid order
    split = (readings[1] - readings[0], readings[2] - readings[1])  # CPU until the answer, after it
    own = self._stand_in_cpu_ns if command in isolated.STAND_INS else None
    if beside_idle["now"]:
        command = command.upper()  # beside idle threads: not the calibration's serial figure
    calls[id(self)].append((command, elapsed, self.call_cpu_ns, answered, own, self.wall_bound, split, self.call_threads, per_thread))
    return elapsed, answered


def close(self):  # type: ignore[no-untyped-def]
    with contextlib.suppress(Exception):
        self._log.seek(0)
        logs[id(self)] = self._log.read()
    _close(self)


def call_overhead(*args, **kwargs):  # type: ignore[no-untyped-def]
    found = _overhead(*args, **kwargs)
    overheads.append(found)
    return found


isolated.KernelServer.call, isolated.KernelServer.close, isolated.call_overhead = call, close, call_overhead
if __import__("os").environ.get("HOLD") == "1":  # prototype: bwrap's own processes held stopped
    _thaw, _freeze = isolated.KernelServer.thaw, isolated.KernelServer.freeze

    def freeze(self):  # type: ignore[no-untyped-def]
        _freeze(self)
        if not hasattr(self, "_held"):
            self._held = frozenset(self.tree()) - {self.kernel_pid()}

    def thaw(self, pids=None):  # type: ignore[no-untyped-def]
        pids = self.tree() if pids is None else pids
        _thaw(self, [p for p in pids if p not in getattr(self, "_held", ())])

    def close_all(self):  # type: ignore[no-untyped-def]
        self._held = frozenset()
        close(self)

    isolated.KernelServer.freeze, isolated.KernelServer.thaw = freeze, thaw
    isolated.KernelServer.close = close_all
isolated.CLOCKLESS_KERNELS = False

repeats, cell = int(sys.argv[1]), sys.argv[2]
task, source = wrapped_source(cell)
target = get_target("cpu-x86-64-v2")
timing = replace(BENCH_TIMING, min_trials=30, max_trials=30, protocol=ISOLATED)
with tempfile.TemporaryDirectory() as tmp:
    import os

    from kernelgraph.agent.backends.bubblewrap import Sandbox

    sandbox = Sandbox(seccomp=os.environ.get("SECCOMP", "1") == "1")  # SECCOMP=0: no filter at all
    backend = _PastAdmissionC(cache_dir=Path(tmp), counters=False, timing=timing, sandbox=sandbox)
    assert backend.compile(task, source, target).ok
    for repeat in range(repeats):
        calls.clear(), logs.clear(), overheads.clear()
        profile = backend.profile(task, source, target, parent_source=source)
        for server, made in calls.items():
            inner = [int(t) / TSC_GHZ for t in re.findall(rb"KGT (\d+)", logs.get(server, b""))]
            kernel = [c for c in made if c[0] == b"c"]
            if len(inner) != len(kernel):
                print(f"  child: {len(inner)} inner readings for {len(kernel)} calls: skipped")
                continue
            stand = [c for c in made if c[0] == b"n"]
            assert len(stand) == isolated.OVERHEAD_CALLS
            stand_excess = statistics.median(c[1] - c[4] for c in stand) / 1e3
            kernel_excess = statistics.median(c[1] - t for c, t in zip(kernel, inner)) / 1e3
            kernel_wall_excess = statistics.median(c[3] - t for c, t in zip(kernel, inner)) / 1e3
            stand_wall_excess = statistics.median(c[3] - c[4] for c in stand) / 1e3
            until = statistics.median(c[6][0] - c[4] for c in stand) / 1e3, statistics.median(
                c[6][0] - t for c, t in zip(kernel, inner)) / 1e3
            after = statistics.median(c[6][1] for c in stand) / 1e3, statistics.median(c[6][1] for c in kernel) / 1e3
            print(f"  tree threads: stand-in {sorted(set(c[7] for c in stand))} kernel {sorted(set(c[7] for c in kernel))}")
            first_thread = statistics.median(c[8][0] for c in stand) / 1e3, statistics.median(c[8][0] for c in kernel) / 1e3
            others = statistics.median(sum(c[8][1:]) - c[4] for c in stand) / 1e3, statistics.median(
                sum(c[8][1:]) - t for c, t in zip(kernel, inner)) / 1e3
            print(f"  whole call by thread: first (bwrap's init): stand-in {first_thread[0]:5.1f} kernel "
                  f"{first_thread[1]:5.1f} | the rest less own: stand-in {others[0]:5.1f} kernel {others[1]:5.1f}")
            print(f"  CPU until the answer less own: stand-in {until[0]:5.1f} kernel {until[1]:5.1f} | after the "
                  f"answer: stand-in {after[0]:5.1f} kernel {after[1]:5.1f}")
            print(f"repeat {repeat}: calibrated cpu {overheads[0].cpu_ns / 1e3:5.1f} us | raw excess: stand-in 'n' "
                  f"{stand_excess:5.1f}, kernel {kernel_excess:5.1f} us | wall to answer less own: stand-in "
                  f"{stand_wall_excess:5.1f}, kernel {kernel_wall_excess:5.1f} | reported {profile.median_ns / 1e3:.1f}",
                  flush=True)
