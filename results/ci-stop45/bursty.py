"""The stop-29 serial-vs-parallel layernorm comparison (test_a_comparison_is_judged_only_on_free_cores'
quiet half), quiet and beside a bursty load that the frozen-instant samples can miss: what the
evaluator judges, and how much CPU stall /proc/pressure/cpu saw over each evaluation."""
import dataclasses, subprocess, sys, tempfile, time
from pathlib import Path
from kernelgraph.agent.backends.c import CBackend
from kernelgraph.agent.backends.timing import ISOLATED, TimingPlan
from kernelgraph.agent.loop import evaluate
from kernelgraph.agent.targets import get_target
from kernelgraph.agent.tasks import get_task

RESULTS = Path(__file__).resolve().parents[1]

def psi_some_us() -> int:
    line = Path("/proc/pressure/cpu").read_text().splitlines()[0]
    return int(line.rsplit("total=", 1)[1])

BURST = "import time\nwhile True:\n    end = time.monotonic() + {on}\n    while time.monotonic() < end: pass\n    time.sleep({off})\n"

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
    for run in range(runs):
        hog = subprocess.Popen([sys.executable, "-c", BURST.format(on=on, off=off)]) if on > 0 else None
        try:
            time.sleep(0.3)
            psi, t = psi_some_us(), time.monotonic()
            verdict = evaluate(task, backend, target, serial, parallel)
            stall_us, wall = psi_some_us() - psi, time.monotonic() - t
        finally:
            if hog:
                hog.kill(); hog.wait()
        print(f"burst {on*1e3:.0f}/{off*1e3:.0f} ms run {run}: {verdict.outcome.value} judged={verdict.judged} "
              f"speedup={verdict.speedup} stall {stall_us/1e3:.1f} ms over {wall:.2f} s | {verdict.reason[:110]}",
              flush=True)

main()
