"""Per call of serial layernorm against its parallel parent (results/ci-stop45/bursty.py's pair), how
long each kernel's threads waited for a CPU until the call's answer (the scheduler's run delay: the
second field of /proc/PID/task/TID/schedstat, read before each `KernelServer.call` and as soon as
the answer is read; the reading delays the freeze by tens of us), the share of calls whose threads
waited more than 100 us, and
quiet and beside a bursty load (every call of each kernel's run: warm-up, crowded pairs and the
candidate's verifying calls included), and the ratio of the kernels' median times.
Usage: waits.py ON_S OFF_S RUNS"""
import dataclasses, os, statistics, subprocess, sys, tempfile, time
from pathlib import Path
import kernelgraph.agent.backends.isolated as isolated
from kernelgraph.agent.backends.c import CBackend
from kernelgraph.agent.backends.timing import ISOLATED, TimingPlan
from kernelgraph.agent.loop import evaluate
from kernelgraph.agent.targets import get_target
from kernelgraph.agent.tasks import get_task

RESULTS = Path(__file__).resolve().parents[1]
BURST = "import time\nwhile True:\n    end = time.monotonic() + {on}\n    while time.monotonic() < end: pass\n    time.sleep({off})\n"
reports = []
waits: dict[int, list[int]] = {}  # per server (its id), its calls' waits
run = isolated._run
def kept(task, input_sets, specs, plan, servers, *args, **kwargs):
    waits.clear()
    report, check = run(task, input_sets, specs, plan, servers, *args, **kwargs)
    reports.append((report.extra, [waits.get(id(s), [0]) for s in servers]))  # candidate, parent
    return report, check
isolated._run = kept

def waited(server) -> int:
    total = 0
    for pid in server.tree():
        for tid in os.listdir(f"/proc/{pid}/task"):
            try:
                total += int(open(f"/proc/{pid}/task/{tid}/schedstat").read().split()[1])
            except (OSError, IndexError, ValueError):
                pass
    return total

answer = isolated.KernelServer._answer
def probed_answer(self, want, deadline):
    answer(self, want, deadline)
    if want == b"d" and getattr(self, "_waited_before", None) is not None:
        waits.setdefault(id(self), []).append(waited(self) - self._waited_before)
        self._waited_before = None
isolated.KernelServer._answer = probed_answer
call = isolated.KernelServer.call
def timed_call(self, deadline, command=b"c"):
    self._waited_before = waited(self) if command == b"c" else None
    return call(self, deadline, command)
isolated.KernelServer.call = timed_call

def main() -> None:
    on, off, runs = float(sys.argv[1]), float(sys.argv[2]), int(sys.argv[3])
    plan = TimingPlan(warmup=2, min_trials=20, max_trials=40, budget_s=4.0, protocol=ISOLATED)
    backend = CBackend(cache_dir=Path(tempfile.mkdtemp()), check_timeout_s=10.0, memory_bytes=768 << 20,
                       counters=False, timing=plan)
    target = dataclasses.replace(get_target("cpu-x86-64-v2"), peak_gflops=None, peak_gbps=None)
    serial = (RESULTS / "redteam-stop29" / "serial_vs_parallel_layernorm.c").read_text()
    loop = "    for (int i = 0; i < r; i++) {"
    parallel = serial.replace(loop, "#pragma omp parallel for schedule(static)\n" + loop, 1)
    task = get_task("layernorm")
    for r in range(runs):
        hog = subprocess.Popen([sys.executable, "-c", BURST.format(on=on, off=off)]) if on > 0 else None
        try:
            time.sleep(0.3)
            reports.clear()
            verdict = evaluate(task, backend, target, serial, parallel)
        finally:
            if hog:
                hog.kill(); hog.wait()
        for extra, (candidate, parent) in reports:
            if not extra:
                continue
            t = extra["times"]
            q = lambda v, p: sorted(v)[int(p * (len(v) - 1))] / 1e3
            print(f"burst {on*1e3:.0f}/{off*1e3:.0f} run {r}: ratio of medians {statistics.median(t[1]) / statistics.median(t[0]):.3f}; "
                  f"waits per call, us p50/p90/max: parallel {q(parent, .5):.0f}/{q(parent, .9):.0f}/{max(parent)/1e3:.0f}, "
                  f"serial {q(candidate, .5):.0f}/{q(candidate, .9):.0f}/{max(candidate)/1e3:.0f}; calls over 100 us: parallel "
                  f"{sum(w > 100e3 for w in parent)}/{len(parent)}, serial {sum(w > 100e3 for w in candidate)}/{len(candidate)}", flush=True)
        print(f"  verdict: judged={verdict.judged} speedup={verdict.speedup and round(verdict.speedup, 3)} | {verdict.reason[:80]}", flush=True)

main()
