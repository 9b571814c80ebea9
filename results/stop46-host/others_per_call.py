"""Per call of serial layernorm against its parallel parent (results/ci-stop45/bursty.py's pair), the
CPU time other tasks ran over the call (from before the thaw to after the freeze): the root cgroup-v1
cpuacct.usage (every task's CPU time, exact) less the CPU time of the call's sandbox processes and of
this thread over the same window,
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

ROOT_USAGE = os.open("/sys/fs/cgroup/cpuacct/cpuacct.usage", os.O_RDONLY)

def root_usage() -> int:
    return int(os.pread(ROOT_USAGE, 64, 0))  # 0.85 us; an open-read-close, 11 us (counted as others)

call = isolated.KernelServer.call
def timed_call(self, deadline, command=b"c"):
    pids = [self.proc.pid, *self.tree()]
    ours = self.process_cpu(pids)
    root, thread = root_usage(), time.thread_time_ns()  # this thread's reading right beside the root's
    result = call(self, deadline, command)
    pids = [self.proc.pid, *self.tree()]
    thread_after, root_after = time.thread_time_ns(), root_usage()
    ours_after = self.process_cpu(pids)  # frozen: the same before or after the root's reading
    if command == b"c":
        others = (root_after - root) - (ours_after - ours) - (thread_after - thread)
        waits.setdefault(id(self), []).append(others)
    return result
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
                  f"others' CPU per call, us p50/p90/max: parallel {q(parent, .5):.0f}/{q(parent, .9):.0f}/{max(parent)/1e3:.0f}, "
                  f"serial {q(candidate, .5):.0f}/{q(candidate, .9):.0f}/{max(candidate)/1e3:.0f}; calls with others over 50 us: parallel "
                  f"{sum(w > 50e3 for w in parent)}/{len(parent)}, serial {sum(w > 50e3 for w in candidate)}/{len(candidate)}", flush=True)
        print(f"  verdict: judged={verdict.judged} speedup={verdict.speedup and round(verdict.speedup, 3)} | {verdict.reason[:80]}", flush=True)

main()
