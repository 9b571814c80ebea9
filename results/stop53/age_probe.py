"""knows_its_age.c through `evaluate`, three times each way: a copy born now against its parent born
a day ago (40% of its rows twice once an hour old), the clocks hidden (evaluator 16) and left to the
kernels. Run: .venv/bin/python results/stop53/age_probe.py"""
import dataclasses
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from kernelgraph.agent.backends import isolated
from kernelgraph.agent.loop import evaluate
from kernelgraph.agent.targets import get_target
from kernelgraph.agent.tasks import get_task
from tests.agent import test_red_team as t

backend = t._PastAdmissionC(cache_dir=Path(tempfile.mkdtemp()), check_timeout_s=10.0, memory_bytes=768 << 20,
                            counters=False, timing=dataclasses.replace(t.ATTACK_TIMING, protocol=t.ISOLATED))
task, target = get_task("rmsnorm"), t._no_peaks(get_target("cpu-x86-64-v2"))
source = (t.RED_TEAM / "knows_its_age.c").read_text()
now = int(time.time())
parent, copy = (f"#define KG_BORN {born}L\n{source}" for born in (now - 86400, now))
for clockless in (True, False):
    isolated.CLOCKLESS_KERNELS = clockless
    for _ in range(3):
        v = evaluate(task, backend, target, copy, parent)
        print("clocks hidden" if clockless else "clocks left", v.outcome.value, f"{v.speedup:.3f}" if v.speedup else None,
              v.reason[:90], flush=True)
