"""The free-cores test's control, run N times: serial layernorm against its parallel parent beside
CPU hogs with the quiet-pairs rule off (and, for comparison, the rule on). Prints each speedup."""
import dataclasses, os, subprocess, sys, tempfile, time
from pathlib import Path
from kernelgraph.agent.backends import isolated
from kernelgraph.agent.backends.c import CBackend
from kernelgraph.agent.backends.timing import ISOLATED, TimingPlan
from kernelgraph.agent.loop import evaluate
from kernelgraph.agent.targets import get_target
from kernelgraph.agent.tasks import get_task

RESULTS = Path(__file__).resolve().parents[1]
serial = (RESULTS / "redteam-stop29" / "serial_vs_parallel_layernorm.c").read_text()
loop_line = "    for (int i = 0; i < r; i++) {"
parallel = serial.replace(loop_line, "#pragma omp parallel for schedule(static)\n" + loop_line, 1)
plan = TimingPlan(warmup=2, min_trials=20, max_trials=40, budget_s=4.0, protocol=ISOLATED)
backend = CBackend(cache_dir=Path(tempfile.mkdtemp()), check_timeout_s=10.0, memory_bytes=768 << 20,
                   counters=False, timing=plan)
target = dataclasses.replace(get_target("cpu-x86-64-v2"), peak_gflops=None, peak_gbps=None)
task = get_task("layernorm")
n = int(sys.argv[1]) if len(sys.argv) > 1 else 5
HOGS = int(sys.argv[2]) if len(sys.argv) > 2 else len(os.sched_getaffinity(0)) - 1
isolated.QUIET_PAIRS = False
# a third argument "free": the parent's threads free on the pair's CPUs (evaluator 14's placement)
isolated.ONE_CPU_PER_THREAD = not (len(sys.argv) > 3 and sys.argv[3] == "free")
print(f"hogs {HOGS}, one CPU per thread: {isolated.ONE_CPU_PER_THREAD}", flush=True)
for i in range(n):
    quiet = evaluate(task, backend, target, serial, parallel)
    hogs = [subprocess.Popen(["python3", "-c", "while True: pass"]) for _ in range(HOGS)]
    time.sleep(0.5)
    try:
        control = evaluate(task, backend, target, serial, parallel)
    finally:
        for h in hogs:
            h.kill(); h.wait()
    print(f"run {i}: quiet {quiet.speedup} | hogs, rule off: {control.outcome.value} {control.speedup} {control.reason[:110]}", flush=True)
