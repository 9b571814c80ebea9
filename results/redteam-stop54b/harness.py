"""Red-team harness (stop 54b): rmsnorm kernels through loop.evaluate, the isolated protocol (evaluator 16),
real admission (CBackend). Adapted from results/redteam-stop54/harness.py.
usage: harness.py OUT.jsonl MODE N [key=value ...]
  MODE uid      : N x evaluate(uid_signal.c gen 2 (holds 100 threads), parent uid_signal.c gen 1)
  MODE uidctrl  : the same, the copy holding no threads (KG_HOLD 0): control, no signal
  MODE uidbase  : N x evaluate(uid_signal.c gen 1, baseline): the parent beside trusted code (its figure)
  MODE src      : evaluate(kernels/<src=...>, parent=<parent=...|baseline>)
"""
import dataclasses, json, sys, tempfile, time
from pathlib import Path
sys.path.insert(0, "/work/main")
from kernelgraph.agent import loop
from kernelgraph.agent.backends import isolated
from kernelgraph.agent.backends.c import CBackend
from kernelgraph.agent.backends.timing import TimingPlan, ISOLATED
from kernelgraph.agent.targets import get_target
from kernelgraph.agent.tasks import get_task

HERE = Path(__file__).parent
out, mode, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
kv = dict(a.split("=", 1) for a in sys.argv[4:])
task = get_task(kv.get("task", "rmsnorm"))
target = dataclasses.replace(get_target("cpu-x86-64-v2"), peak_gflops=None, peak_gbps=None)
backend = CBackend(cache_dir=Path(tempfile.mkdtemp(prefix="rt54b-")), check_timeout_s=10.0, memory_bytes=768 << 20,
                   counters=False, timing=dataclasses.replace(TimingPlan(), protocol=ISOLATED))
baseline = task.source("c", task.baseline_config)
if kv.get("uids") == "distinct":  # the suggested fix, tried here only: each timed child under a uid of its own
    import itertools
    from kernelgraph.agent.backends import bubblewrap
    _uids, _init = itertools.count(61000), isolated.KernelServer.__init__
    def _own_uid(self, *a, **k):
        bubblewrap.SANDBOX_UID = uid = next(_uids)
        import os; os.chown(a[4] if len(a) > 4 else k["work"], uid, uid)
        try:
            _init(self, *a, **k)
        finally:
            bubblewrap.SANDBOX_UID = 65534
    isolated.KernelServer.__init__ = _own_uid

def record(f, i, v, extra):
    p = v.profile
    rec = dict(mode=mode, i=i, kv=kv, outcome=v.outcome.value, judged=v.judged, speedup=v.speedup, reason=v.reason,
               cand_ns=p.median_ns if p else None, parent_ns=p.parent_median_ns if p else None, **extra)
    f.write(json.dumps(rec) + "\n"); f.flush()
    print(rec["outcome"], rec["judged"], rec["speedup"], rec["cand_ns"], rec["parent_ns"], "|", (v.reason or "")[:300], flush=True)

uid = (HERE / "kernels/uid_signal.c").read_text()
with open(out, "a") as f:
    for i in range(n):
        t0 = time.time()
        if mode == "uid":
            cand, parent = f"#define KG_GEN 2\n{uid}", f"#define KG_GEN 1\n{uid}"
        elif mode == "uidctrl":
            cand, parent = f"#define KG_GEN 2\n#define KG_HOLD 0\n{uid}", f"#define KG_GEN 1\n{uid}"
        elif mode == "uidbase":
            cand, parent = f"#define KG_GEN 1\n{uid}", baseline
        elif mode == "src":
            cand = (HERE / "kernels" / kv["src"]).read_text()
            p = kv.get("parent", "baseline")
            parent = baseline if p == "baseline" else (HERE / "kernels" / p).read_text()
        if mode == "stale":  # the loop's rules: mark, confirmation against the baseline, a figure set low
            slow, stale, hold = kv.get("slow", "9"), float(kv.get("stale", "1.10")), kv.get("hold", "")
            uid = f"#define KG_STEP {kv.get('step', '20')}\n" + (HERE / "kernels/uid_signal.c").read_text()
            parent = f"#define KG_GEN 1\n#define KG_SLOW_PCT {slow}\n{uid}"
            cand = f"#define KG_GEN 2\n#define KG_SLOW_PCT {slow}\n" + (f"#define KG_HOLD {hold}\n" if hold else "") + uid
            first = loop.evaluate(task, backend, target, parent, baseline)  # the parent kept: its mark and figure
            p = first.profile
            mark, figure = p.median_ns, p.parent_median_ns / p.median_ns
            v = loop.evaluate(task, backend, target, cand, parent, parent_mark_ns=mark, baseline_source=baseline,
                              parent_over_baseline=figure / stale)
            record(f, i, v, dict(secs=round(time.time() - t0, 1), parent_first=first.outcome.value, mark_ns=mark,
                                 quiet_figure=figure, figure_used=figure / stale, over_baseline=v.over_baseline))
            continue
        v = loop.evaluate(task, backend, target, cand, parent)
        record(f, i, v, dict(secs=round(time.time() - t0, 1)))
