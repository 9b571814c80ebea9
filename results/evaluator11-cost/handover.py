"""Where a parallel kernel's isolated call's wall time goes, from the evaluator's side (us)."""
import sys, tempfile, time, select as _select
from dataclasses import replace
from pathlib import Path
import numpy as np
import kernelgraph.agent.backends.isolated as iso
from kernelgraph.agent.backends.c import CBackend
from kernelgraph.agent.backends.timing import ISOLATED
from kernelgraph.agent.targets import get_target
from kernelgraph.agent.tasks import get_task
from kernelgraph.bench.configs import checked_configs
from kernelgraph.bench.sandbox import BENCH_TIMING
marks = {}
def mark(name): marks[name] = time.perf_counter_ns()
_drain, _thaw, _answer = iso.KernelServer._drain, iso.KernelServer.thaw, iso.KernelServer._answer
def drain(self): mark("start"); _drain(self); mark("drained")
def thaw(self, pids=None): _thaw(self, pids); mark("thawed")
_write = iso.os.write
class FakeSelect:
    @staticmethod
    def select(*a):
        mark("waiting"); r = _select.select(*a); mark("woke"); return r
iso.select = FakeSelect
def answer(self, want, deadline): _answer(self, want, deadline); mark("answered")
iso.KernelServer._drain, iso.KernelServer.thaw, iso.KernelServer._answer = drain, thaw, answer
rows = []
_call = iso.KernelServer.call
def call(self, deadline, command=b"c"):
    marks.clear(); r = _call(self, deadline, command)
    if command == b"c" or command == b"p":
        m = marks; rows.append((command, m["drained"]-m["start"], m["thawed"]-m["drained"], m["waiting"]-m["thawed"], m["woke"]-m["waiting"], m["answered"]-m["woke"], r[1]))
    return r
iso.KernelServer.call = call
task = get_task(sys.argv[1]); label = sys.argv[2]
source = task.source("c", checked_configs(task)[label]); target = get_target("cpu-x86-64-v2")
with tempfile.TemporaryDirectory() as cache:
    b = CBackend(cache_dir=Path(cache), counters=False, timing=replace(BENCH_TIMING, protocol=ISOLATED))
    for rep in range(int(sys.argv[3])):
        rows.clear()
        p = b.profile(task, source, target, parent_source=source)
        for cmd in (b"p", b"c"):
            a = np.array([r[1:] for r in rows if r[0] == cmd]) / 1e3
            print(cmd, "median", f"{p.median_ns/1e3:.0f}", " ".join(f"{n} {np.median(a[:, i]):.1f}" for i, n in enumerate(("drain", "thaw", "write+select-entry", "blocked", "read", "answered-total"))))
