"""Interleaved: each round runs the in-process protocol once and the isolated one once per mode."""
import sys, tempfile, statistics, contextlib, os, json
from dataclasses import replace
from pathlib import Path
import numpy as np
import kernelgraph.agent.backends.isolated as iso
from kernelgraph.agent.backends.c import CBackend
from kernelgraph.agent.backends.timing import IN_PROCESS, ISOLATED
from kernelgraph.agent.targets import get_target
from kernelgraph.agent.tasks import get_task
from kernelgraph.bench.configs import checked_configs
from kernelgraph.bench.sandbox import BENCH_TIMING

orig = dict(write=iso.CallChecker.write, check=iso.CallChecker.check, same=iso._same_bytes, allw=iso._all_written, pin=iso._on_cpu_of)
def write_mul(self, server):
    with iso._on_cpu_of(server):
        for buf, name in zip(server.inputs, self.expected, strict=True):
            e = self.expected[name]
            if e.dtype.kind == "f": np.multiply(e, e.dtype.type(1), out=buf)
            else: np.copyto(buf, e)
        for out in server.outputs:
            out.fill(np.nan if out.dtype.kind == "f" else np.iinfo(out.dtype).min)
from kernelgraph.agent.backends._child import write_variant
orig_variant = iso.CallChecker.variant
def lazy_variant(self, factors, call):
    self._factors = factors
    self._offsets = {}
    for name, array in self.base.items():
        offsets = factors.size - array.size + 1
        while (offset := self.draw.randrange(offsets)) in self.used[name]:
            pass
        self.used[name].add(offset)
        self._offsets[name] = offset
def lazy_write(self, server):
    with iso._on_cpu_of(server):
        for buf, name in zip(server.inputs, self.expected, strict=True):
            write_variant(self.base[name], self._factors, self._offsets[name], buf)
        for out in server.outputs:
            out.fill(np.nan if out.dtype.kind == "f" else np.iinfo(out.dtype).min)
def lazy_check(self, call, servers):
    for name in self.base:
        write_variant(self.base[name], self._factors, self._offsets[name], self.expected[name])
    return orig["check"](self, call, servers)
def touch_write(self, server):
    orig["write"](self, server)
    which = TOUCH
    for a in (list(server.inputs) if "i" in which else []) + (list(server.outputs) if "o" in which else []):
        a.reshape(-1).view(np.uint8)[::64].sum()
def setmode(m):
    global TOUCH
    TOUCH = m.split(":")[1] if ":" in m else "io"
    if "touch" in m and "lazy" in m:
        def lt(self, server):
            lazy_write(self, server)
            for a in list(server.inputs) + list(server.outputs):
                a.reshape(-1).view(np.uint8)[::64].sum()
        iso.CallChecker.variant, iso.CallChecker.write, iso.CallChecker.check = lazy_variant, lt, lazy_check
        return
    if "touch" in m:
        iso.CallChecker.write = touch_write
        return
    if "lazy" in m:
        iso.CallChecker.variant, iso.CallChecker.write, iso.CallChecker.check = lazy_variant, lazy_write, (lambda self, call, servers: [""] * len(servers)) if "nocheck" in m else lazy_check
        return
    iso.CallChecker.variant = orig_variant
    iso.QUIET_PAIRS = "loud" not in m
    iso.CallChecker.write = write_mul if "mul" in m else orig["write"]
    iso.CallChecker.check = (lambda self, call, servers: [""] * len(servers)) if "nocheck" in m else orig["check"]
    iso._same_bytes = (lambda a, b: True) if "noin" in m else orig["same"]
    iso._all_written = (lambda o: True) if "noscan" in m else orig["allw"]
task = get_task(sys.argv[1]); label = sys.argv[2]; reps = int(sys.argv[3]); modes = sys.argv[4].split(";")
source = task.source("c", checked_configs(task)[label]); target = get_target("cpu-x86-64-v2")
res = {m: [] for m in ["in-process"] + modes}
with tempfile.TemporaryDirectory() as cache:
    b = {p: CBackend(cache_dir=Path(cache), counters=False, timing=replace(BENCH_TIMING, protocol=p)) for p in (ISOLATED, IN_PROCESS)}
    for p in b: b[p].compile(task, source, target)
    for r in range(reps):
        res["in-process"].append(b[IN_PROCESS].profile(task, source, target, parent_source=(None if os.environ.get("SOLO") else source)).median_ns)
        for m in modes:
            setmode(m)
            res[m].append(b[ISOLATED].profile(task, source, target, parent_source=(None if os.environ.get("SOLO") else source)).median_ns)
        setmode("")
        print(r, {m: round(v[-1] / 1e3) for m, v in res.items()}, flush=True)
ip = statistics.median(res["in-process"])
for m, v in res.items():
    print(f"{m:24s} median {statistics.median(v)/1e3:8.1f} us  x{statistics.median(v)/ip:.3f}")
