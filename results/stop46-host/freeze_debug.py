"""Six isolated profiles of layernorm best-B beside a nice-19 spinner pinned to each CPU; when a
freeze has not taken 2.5 s, print the state of the thread still running (its /proc stat, stack,
pending signals, allowed CPUs) and stop. Variants (environment): UNPINNED=1 places no kernel on a
home CPU; PIN_ONCE=1 sets a thread's CPUs only when they change; SPINNERS_UNPINNED=1 leaves the
spinners' CPUs to the scheduler. Usage: freeze_debug.py"""
import os, subprocess, sys, tempfile, time
from dataclasses import replace
from pathlib import Path
import kernelgraph.agent.backends.isolated as iso
from kernelgraph.agent.backends.c import CBackend
from kernelgraph.agent.backends.timing import ISOLATED
from kernelgraph.agent.targets import get_target
from kernelgraph.agent.tasks import get_task
from kernelgraph.bench.configs import checked_configs
from kernelgraph.bench.sandbox import BENCH_TIMING
iso.FREEZE_TIMEOUT_S = 3
import os as _os
if _os.environ.get("UNPINNED"): iso.Placement.cpus = lambda self, server, command: self.allowed
if _os.environ.get("PIN_ONCE"):  # set a thread's CPUs only when they change
    _setaff = _os.sched_setaffinity
    iso.os.sched_setaffinity = lambda tid, cpus: None if _os.sched_getaffinity(tid) == set(cpus) else _setaff(tid, cpus)
orig = iso.KernelServer._still_freezing
def dbg(self, started, running):
    if time.monotonic() > started + 2.5 and running:
        tid = running[0].split()[0]
        for pid in self._walk():
            if os.path.exists(f"/proc/{pid}/task/{tid}"):
                for f in ("stat", "wchan", "stack", "syscall"):
                    try: print(f, open(f"/proc/{pid}/task/{tid}/{f}").read()[:600])
                    except Exception as e: print(f, e)
                st = open(f"/proc/{pid}/task/{tid}/status").read()
                print([l for l in st.splitlines() if l.split(':')[0] in ("State","SigPnd","ShdPnd","SigBlk","Cpus_allowed_list","voluntary_ctxt_switches","nonvoluntary_ctxt_switches")])
        raise SystemExit(1)
    return orig(self, started, running)
iso.KernelServer._still_freezing = dbg
SPIN = ("import os,sys; os.nice(19)\nwhile True: pass" if _os.environ.get("SPINNERS_UNPINNED")
        else "import os,sys; os.sched_setaffinity(0,{int(sys.argv[1])}); os.nice(19)\nwhile True: pass")
task = get_task("layernorm"); source = task.source("c", checked_configs(task)["best-B"]); target = get_target("cpu-x86-64-v2")
iso.QUIET_PAIRS = False
with tempfile.TemporaryDirectory() as cache:
    b = CBackend(cache_dir=Path(cache), counters=False, timing=replace(BENCH_TIMING, protocol=ISOLATED))
    spinners = [subprocess.Popen([sys.executable, "-c", SPIN, str(c)]) for c in (0, 1)]
    try:
        for r in range(6):
            p = b.profile(task, source, target, parent_source=source); print(r, p.outcome, p.median_ns, p.reason[:100])
    finally:
        for s in spinners: s.kill()
