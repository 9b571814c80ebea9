"""How far apart the predict_variants attack and candidate parents are when the attack cannot predict.

Runs `evaluate(attack, parent)` for each parent a few times on this host and prints the speedups:
the red-team test asserts no fake speedup, so its parent must differ from the attack only where the
attack never takes effect."""
import sys
import tempfile
from pathlib import Path

from kernelgraph.agent.backends.c import CBackend
from kernelgraph.agent.backends.timing import TimingPlan, ISOLATED
from kernelgraph.agent.loop import evaluate
from kernelgraph.agent.tasks import get_task
from kernelgraph.agent.targets import get_target
import dataclasses

src = Path("tests/agent/red_team/predict_variants.c").read_text()
parents = {
    "folded (< 0.0f)": src.replace("<= 3e-5f * fabsf(want)", "< 0.0f"),
    "opaque (< -fabsf(want))": src.replace("<= 3e-5f * fabsf(want)", "< -fabsf(want)"),
}
target = dataclasses.replace(get_target("cpu-x86-64-v2"), peak_gflops=None, peak_gbps=None)
plan = TimingPlan(warmup=3, min_trials=10, max_trials=20, budget_s=8.0, protocol=ISOLATED)
backend = CBackend(cache_dir=Path(tempfile.mkdtemp()), check_timeout_s=10.0, memory_bytes=768 << 20,
                   counters=False, timing=plan)
task = get_task("matvec")
for rep in range(int(sys.argv[1]) if len(sys.argv) > 1 else 3):
    for name, parent in parents.items():
        v = evaluate(task, backend, target, src, parent)
        print(rep, name, v.outcome.value, f"{v.speedup:.3f}" if v.speedup else None, v.reason[:80], flush=True)
