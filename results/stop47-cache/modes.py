"""TASK CONFIG against itself per round: in-process, then the isolated protocol in each MODE (patched for
the diagnosis only): base; nocheck (no check of a call); novar (the inputs of the first call repeat:
no variant computed after it); both; nowrite (nothing written after the first call: with nocheck); noread (no read-back); minmax (the output scan by min and max, no temporary); norows (one row checked). Usage: modes.py TASK CONFIG ROUNDS "mode,mode" [solo]"""
import statistics, sys, tempfile
from dataclasses import replace
from pathlib import Path
import kernelgraph.agent.backends.isolated as iso
from kernelgraph.agent.backends.c import CBackend
from kernelgraph.agent.backends.timing import IN_PROCESS, ISOLATED
from kernelgraph.agent.targets import get_target
from kernelgraph.agent.tasks import get_task
from kernelgraph.bench.configs import checked_configs
from kernelgraph.bench.sandbox import BENCH_TIMING
import numpy as np, os, time
CHECK_S = []
PAD_S = float(os.environ.get("PAD_S", "0.004"))
orig_all_written = iso._all_written
orig_read_back = iso.KernelServer.read_back
orig = {n: getattr(iso.CallChecker, n) for n in ("check", "variant", "write")}
def patch(mode):
    for n, f in orig.items(): setattr(iso.CallChecker, n, f)
    if "nocheck" in mode: iso.CallChecker.check = lambda self, call, servers: [""] * len(servers)
    if "timecheck" in mode:
        def timed(self, call, servers):
            t = time.perf_counter(); r = orig["check"](self, call, servers); CHECK_S.append(time.perf_counter() - t); return r
        iso.CallChecker.check = timed
    if "refill" in mode:
        def refill(self, call, servers):
            r = orig["check"](self, call, servers)
            for server in servers:
                for out in server.outputs: out.fill(np.nan)
            return r
        iso.CallChecker.check = refill
    if "only0" in mode or "only1" in mode:
        keep = 0 if "only0" in mode else 1
        def only(self, call, servers):
            return [orig["check"](self, call, [server])[0] if k == keep else "" for k, server in enumerate(servers)]
        iso.CallChecker.check = only
    if "rbfull" in mode:
        def rbfull(self):
            for a in list(self.inputs) + list(self.outputs): a.min()
        iso.KernelServer.read_back = rbfull
    if "rb2" in mode:
        def rb2(self):
            orig_read_back(self); orig_read_back(self)
        iso.KernelServer.read_back = rb2
    if "sweep" in mode:
        junk = np.ones(48 << 20, dtype=np.uint8)
        def sweep(self, call, servers):
            r = orig["check"](self, call, servers)
            junk[::64] += 1
            return r
        iso.CallChecker.check = sweep
    if "scan0" in mode or "scan1" in mode:
        which = 0 if "scan0" in mode else 1
        def scan_one(self, call, servers):
            for o in servers[which].outputs: iso._all_written(o)
            return [""] * len(servers)
        iso.CallChecker.check = scan_one
    if "wantonly" in mode or "defer" in mode:
        def want_only(self, call, servers):
            total = self.specs[0].shape[0]
            rows = np.array(sorted(self.draw.sample(range(total), min(64, total))))
            self.rows_of(self.expected, rows)
            return [""] * len(servers)
        iso.CallChecker.check = want_only
    if "defer" in mode:
        def deferred(self, server):
            for o in server.outputs: iso._all_written(o)
            orig["write"](self, server)
        iso.CallChecker.write = deferred
    if "scanonly" in mode:
        def scanonly(self, call, servers):
            return ["" if all(iso._all_written(o) for o in server.outputs) else "unwritten" for server in servers]
        iso.CallChecker.check = scanonly
    if "rowsonly" in mode:
        iso._all_written = lambda out: True
    if "sleep" in mode:
        iso.CallChecker.check = lambda self, call, servers: (time.sleep(PAD_S), [""] * len(servers))[1]
    if "spin" in mode:
        def spin(self, call, servers):
            end = time.perf_counter() + PAD_S
            while time.perf_counter() < end: pass
            return [""] * len(servers)
        iso.CallChecker.check = spin
    if "other" in mode:
        def other(self, call, servers):
            home = servers[0].last_cpu(); allowed = os.sched_getaffinity(0)
            os.sched_setaffinity(0, (allowed - {home}) or allowed)
            try: return orig["check"](self, call, servers)
            finally: os.sched_setaffinity(0, allowed)
        iso.CallChecker.check = other
    if "novar" in mode:
        def variant(self, factors, call):
            if call == 0: orig["variant"](self, factors, call)
        iso.CallChecker.variant = variant
    iso._all_written = orig_all_written
    if "minmax" in mode:
        def all_written(out):
            if out.dtype.kind == "f":
                return bool(np.isfinite(out.min()) and np.isfinite(out.max()))
            return orig_all_written(out)
        iso._all_written = all_written
    if "norows" in mode:
        iso.CHECKED_ROWS = 1
    else:
        iso.CHECKED_ROWS = 64
    if "nowrite" in mode:
        def write(self, server):
            if not getattr(server, "_written", False): orig["write"](self, server); server._written = True
        iso.CallChecker.write = write
    if "noread" in mode:
        iso.KernelServer.read_back = lambda self: None
    else:
        iso.KernelServer.read_back = orig_read_back
task = get_task(sys.argv[1]); source = task.source("c", checked_configs(task)[sys.argv[2]]); target = get_target("cpu-x86-64-v2")
parent = None if sys.argv[5:] == ["solo"] else source
modes = sys.argv[4].split(",")
with tempfile.TemporaryDirectory() as cache:
    b = {p: CBackend(cache_dir=Path(cache), counters=False, timing=replace(BENCH_TIMING, protocol=p)) for p in (ISOLATED, IN_PROCESS)}
    res = {}
    for r in range(int(sys.argv[3])):
        res.setdefault("in-process", []).append(b[IN_PROCESS].profile(task, source, target, parent_source=parent).median_ns)
        for m in modes:
            patch(m)
            p = b[ISOLATED].profile(task, source, target, parent_source=parent)
            res.setdefault(m, []).append(p.median_ns if p.outcome.value == "kept" else float("nan"))
        patch("")
        print(r, {k: round(v[-1] / 1e3) for k, v in res.items()}, flush=True)
    ip = statistics.median(res["in-process"])
    for k, v in res.items():
        paired = sorted(x / y for x, y in zip(v, res["in-process"]))
        q = statistics.quantiles(paired, n=4) if len(paired) > 1 else paired * 3
        if CHECK_S: print("check takes", statistics.median(CHECK_S) * 1e3, "ms")
        print(f"{k:24s} {statistics.median(v)/1e3:7.0f} us x{statistics.median(v)/ip:.3f}  paired by round: median x{q[1]:.3f} IQR [{q[0]:.3f}, {q[2]:.3f}]")
