"""Evaluator 13's rule at work: results/ci-stop45/bursty.py's comparison (serial layernorm against its
parallel parent, 0.62-0.72x on free cores), quiet and beside a bursty load, with each run's verdict,
its pairs left out (`crowded_pairs`) and how many of them for what other tasks ran beside a call
(`ran_beside_pairs`). With RULE_OFF=1 the allowance is infinite (the samples alone decide).
Usage: rule.py ON_S OFF_S RUNS"""
import dataclasses, math, os, subprocess, sys, tempfile, time
from pathlib import Path
import kernelgraph.agent.backends.isolated as isolated
from kernelgraph.agent.backends.c import CBackend
from kernelgraph.agent.backends.timing import ISOLATED, TimingPlan
from kernelgraph.agent.loop import evaluate
from kernelgraph.agent.targets import get_target
from kernelgraph.agent.tasks import get_task

RESULTS = Path(__file__).resolve().parents[1]
BURST = "import time\nwhile True:\n    end = time.monotonic() + {on}\n    while time.monotonic() < end: pass\n    time.sleep({off})\n"
if os.environ.get("RULE_OFF"):
    isolated.OTHERS_CPU_ALLOWED_NS = math.inf
reports = []
run = isolated._run
def kept(*args, **kwargs):
    report, check = run(*args, **kwargs)
    reports.append(report.extra)
    return report, check
isolated._run = kept

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
        left_out = " ".join(f"[{e['crowded_pairs']} left out, {e['ran_beside_pairs']} for others beside a call, "
                            f"{len(e['times'][0])} counted]" for e in reports if e)
        print(f"burst {on*1e3:.0f}/{off*1e3:.0f} ms run {r}: judged={verdict.judged} outcome={verdict.outcome.value} "
              f"speedup={verdict.speedup and round(verdict.speedup, 3)} {left_out} | {verdict.reason[:100]}", flush=True)

main()
