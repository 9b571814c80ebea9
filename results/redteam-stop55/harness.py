"""Red-team harness (stop 55): rmsnorm kernels through loop.evaluate, the isolated protocol (evaluator 16),
real admission (CBackend), as results/redteam-stop54b/harness.py.
usage: harness.py OUT.jsonl MODE N [key=value ...]
  MODE age   : leak the evaluator's pid part once (kernels/step_age.c KG_LEAK 2); then per run: leak the step count
               (KG_LEAK 1), write the copy born now and the parent born `older` steps ago, evaluate(copy, parent)
  MODE stale : the loop's rules: per run leak the count, the parent born now is kept against the baseline (its
               mark and figure), `burn` leak evaluations pass (other work of the loop), then the copy (born now)
               against the parent with parent_mark_ns, baseline_source and a figure divided by `stale`
keys: uids=counted (the step uids of ef29566, before the fix 27ee4b8: 2^30 + (pid << 8) + a count; default: the tree's),
      same=1 (control: the parent born when the copy is: no age), uids=random (the fix tried: each step's uid drawn
      at random, not counted), older=STEPS (100), honest=STEPS (KG_HONEST_STEPS, 40), slow=PCT (40)
"""
import dataclasses, json, re, sys, tempfile, time
from pathlib import Path
sys.path.insert(0, "/work/main")
from kernelgraph.agent import loop
from kernelgraph.agent.backends import bubblewrap
from kernelgraph.agent.backends.c import CBackend
from kernelgraph.agent.backends.timing import TimingPlan, ISOLATED
from kernelgraph.agent.targets import get_target
from kernelgraph.agent.tasks import get_task

HERE = Path(__file__).parent
out, mode, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
kv = dict(a.split("=", 1) for a in sys.argv[4:])
task = get_task("rmsnorm")
target = dataclasses.replace(get_target("cpu-x86-64-v2"), peak_gflops=None, peak_gbps=None)
backend = CBackend(cache_dir=Path(tempfile.mkdtemp(prefix="rt55-")), check_timeout_s=10.0, memory_bytes=768 << 20,
                   counters=False, timing=dataclasses.replace(TimingPlan(), protocol=ISOLATED))
baseline = task.source("c", task.baseline_config)
if kv.get("uids") == "random":  # the suggested fix, tried here only: a uid drawn at random per step, not a count
    import random
    _draw = random.SystemRandom()
    bubblewrap.step_uid = lambda: (1 << 30) + _draw.randrange(1 << 29)
elif kv.get("uids") == "counted":  # the uids before 27ee4b8 (ef29566 and earlier): 2^30 + (pid << 8) + a count of steps
    import itertools, os
    _steps = itertools.count()
    bubblewrap.step_uid = lambda: (1 << 30) + (os.getpid() << 8) + next(_steps) % 256
src = (HERE / "kernels/step_age.c").read_text()
slow, honest, older = int(kv.get("slow", "40")), int(kv.get("honest", "40")), int(kv.get("older", "100"))

def leak(which):
    v = loop.evaluate(task, backend, target, f"#define KG_LEAK {which}\n{src}", baseline)
    m = re.search(r"got (-?[0-9.e+]+)", v.reason or "")
    if not m:
        raise SystemExit(f"no leak: {v.outcome.value} {v.reason}")
    return int(float(m.group(1)))

def kernel(born, pid, slow_pct=None):
    return (f"#define KG_BORN_STEP {born}L\n#define KG_PID {pid}L\n#define KG_HONEST_STEPS {honest}L\n"
            f"#define KG_SLOW_PCT {slow_pct or slow}\n{src}")

def record(f, i, v, extra):
    p = v.profile
    rec = dict(mode=mode, i=i, kv=kv, outcome=v.outcome.value, judged=v.judged, speedup=v.speedup, reason=v.reason,
               cand_ns=p.median_ns if p else None, parent_ns=p.parent_median_ns if p else None, **extra)
    f.write(json.dumps(rec) + "\n"); f.flush()
    print(rec["outcome"], rec["judged"], rec["speedup"], rec["cand_ns"], rec["parent_ns"], "|", (v.reason or "")[:240],
          "|", extra, flush=True)

pid = leak(2)
print("leaked pid part:", pid, flush=True)
with open(out, "a") as f:
    for i in range(n):
        t0 = time.time()
        count = leak(1) - 1000  # the count at the leak's check step
        if mode == "age":
            copy = kernel(count, pid)
            parent = kernel(count if kv.get("same") == "1" else (count - older) & 255, pid)
            v = loop.evaluate(task, backend, target, copy, parent)
            record(f, i, v, dict(pid=pid, count=count, secs=round(time.time() - t0, 1)))
        elif mode == "stale":
            stale = float(kv.get("stale", "1.10"))
            parent = kernel(count, pid)
            first = loop.evaluate(task, backend, target, parent, baseline)  # the parent kept: its mark and figure
            p = first.profile
            mark, figure = p.median_ns, p.parent_median_ns / p.median_ns
            for _ in range(int(kv.get("burn", "2"))):
                leak(1)  # other work of the loop meanwhile
            now = leak(1) - 1000
            copy = kernel(now, pid)
            v = loop.evaluate(task, backend, target, copy, parent, parent_mark_ns=mark, baseline_source=baseline,
                              parent_over_baseline=figure / stale)
            record(f, i, v, dict(pid=pid, count=count, now=now, parent_first=first.outcome.value,
                                 parent_first_speedup=first.speedup, mark_ns=mark, quiet_figure=figure,
                                 figure_used=figure / stale, over_baseline=v.over_baseline,
                                 secs=round(time.time() - t0, 1)))
