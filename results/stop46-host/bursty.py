"""Needs the rule this measured, which was not adopted: `git apply results/stop46-host/host_share.patch`
(and `git checkout agent/backends/isolated.py` after). results/ci-stop45/bursty.py's comparison (serial layernorm against its parallel parent, 0.63-0.68x
on free cores), quiet and beside a bursty load, with the share of the CPUs others took over each
evaluation's timed calls (`isolated.host_share`) printed, the rule off (HOST_SHARE_MAX infinite) so
every run's verdict and share are seen. Usage: bursty.py ON_S OFF_S RUNS"""
import dataclasses, math, subprocess, sys, tempfile, time
from pathlib import Path
import kernelgraph.agent.backends.isolated as isolated
from kernelgraph.agent.backends.c import CBackend
from kernelgraph.agent.backends.timing import ISOLATED, TimingPlan
from kernelgraph.agent.loop import evaluate
from kernelgraph.agent.targets import get_target
from kernelgraph.agent.tasks import get_task

RESULTS = Path(__file__).resolve().parents[1]
BURST = "import time\nwhile True:\n    end = time.monotonic() + {on}\n    while time.monotonic() < end: pass\n    time.sleep({off})\n"
shares: list[isolated.HostShare] = []
measure = isolated.host_share
raw: list[str] = []
def recorded(before, after, window_ns, cpus):
    busy, stolen, ours = (a - b for a, b in zip(after, before))
    raw.append(f"[busy {busy/1e6:.0f} ours {ours/1e6:.0f} of {window_ns*cpus/1e6:.0f} ms]")
    shares.append(measure(before, after, window_ns, cpus))
    return shares[-1]
isolated.host_share = recorded
isolated.HOST_SHARE_MAX = math.inf

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
            shares.clear(); raw.clear()
            verdict = evaluate(task, backend, target, serial, parallel)
        finally:
            if hog:
                hog.kill(); hog.wait()
        seen = " ".join(f"others {s.others:.1%} (stolen {s.stolen:.1%}) {r}" for s, r in zip(shares, raw)) or "no share (refused before it, or both kernels serial)"
        print(f"burst {on*1e3:.0f}/{off*1e3:.0f} ms run {run}: judged={verdict.judged} speedup="
              f"{verdict.speedup and round(verdict.speedup, 3)} {seen} | {verdict.reason[:90]}", flush=True)

main()
