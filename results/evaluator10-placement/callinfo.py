"""The internals of every timed call of an isolated profile: answered, CPU until the answer, total CPU."""
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
def call(self, deadline, command=b"c"):
    pids = self.tree(); before = self.thread_cpu(pids); pb = self.process_cpu(pids)
    start = time.perf_counter_ns(); self._drain(); self.thaw(pids); iso.os.write(self._go, command)
    self._answer(b"d", deadline); answered = time.perf_counter_ns() - start
    at_answer = self.process_cpu(pids)
    if command in iso.STAND_INS:
        spent = iso.os.read(self._done, 16).ljust(16, b"\0")
        self._stand_in_cpu_ns = int.from_bytes(spent[:8], "little"); self._stand_in_wall_ns = int.from_bytes(spent[8:], "little")
    self.freeze(); after = self.tree()
    ran = {tid: ns - before.get(tid, 0) for tid, ns in self.thread_cpu(after).items()}
    self.accounted_ns += sum(ran.values())
    total = max(self.process_cpu(after) - pb, 0); until = min(max(at_answer - pb, 0), total)
    self.call_cpu_ns = total; after_answer = total - until; self.wall_bound = answered <= until
    res = min(answered, until) + after_answer
    cpu = self.last_cpu()
    log.append(((id(self) % 1000, cpu), command, answered, at_answer - pb, total, sorted(ran.values(), reverse=True), res, self.wall_bound))
    return res, answered
iso.KernelServer.call = call
task = get_task(sys.argv[1]); label = sys.argv[2]
source = task.source("c", checked_configs(task)[label]); target = get_target("cpu-x86-64-v2")
with tempfile.TemporaryDirectory() as cache:
    b = CBackend(cache_dir=Path(cache), counters=False, timing=replace(BENCH_TIMING, protocol=ISOLATED))
    b.compile(task, source, target)
    for r in range(int(sys.argv[3])):
        log.clear(); p = b.profile(task, source, target, parent_source=source)
        import collections
        print(f"median {p.median_ns/1e3:.0f} relIQR {p.iqr_ns/p.median_ns:.3f} self-speedup {p.parent_median_ns/p.median_ns:.3f} paired-ratio median {np.median(p.paired_ratios):.3f} IQR {np.subtract(*np.percentile(p.paired_ratios,[75,25])):.3f}")
        per = collections.defaultdict(list)
        for (sid, cmd, *_r) in log:
            if cmd == b"c": per[sid].append(_r[-2]/1e3)
        print("  ", {k: (len(v), int(np.median(v))) for k, v in sorted(per.items())})
        if len(sys.argv) > 4:
            print("   seq", [(int(c[2]/1e3), int(c[-2]/1e3)) for c in log if c[1] == b"c"])
        continue
        for (sid, cmd, ans, ua, tot, ran, res, wb) in log:
            if cmd != b"c": continue
            print(f"cpu{sid} ans {ans/1e3:6.0f} until {ua/1e3:6.0f} total {tot/1e3:6.0f} ran {[int(v/1e3) for v in ran]} -> {res/1e3:6.0f} {'W' if wb else 'C'}")
