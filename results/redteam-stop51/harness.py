"""Red-team harness (stop 51): real rmsnorm kernels through loop.evaluate with the isolated protocol,
admission skipped (tests/agent/test_red_team.py's _PastAdmissionC), the baseline in the comparison.
usage: harness.py OUT.jsonl MODE N [key=value ...]
  MODE figure : evaluate(cand, baseline) -> F (gen0 kept over the trusted baseline, two kernels)
  MODE attack : N x evaluate(cand, parent, baseline_source=baseline, parent_over_baseline=F, parent_mark_ns=M)
keys: cand=FILE parent=FILE F=float M=float beside=0|1 spin=PCT (appended as a define to parent)
"""
import json, sys, time, tempfile, dataclasses
from pathlib import Path
sys.path.insert(0, "/work/main")
from kernelgraph.agent import loop
from kernelgraph.agent.backends.timing import TimingPlan, ISOLATED
from kernelgraph.agent.targets import get_target
from kernelgraph.agent.tasks import get_task
from tests.agent.test_red_team import _PastAdmissionC

HERE = Path(__file__).parent
out, mode, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
kv = dict(a.split("=", 1) for a in sys.argv[4:])
loop.BASELINE_IN_THE_COMPARISON = kv.get("beside", "1") == "1"
task = get_task("rmsnorm")
t = get_target("cpu-x86-64-v2")
target = dataclasses.replace(t, peak_gflops=None, peak_gbps=None)
backend = _PastAdmissionC(cache_dir=Path(tempfile.mkdtemp(prefix="rt51-")), check_timeout_s=10.0,
                          memory_bytes=768 << 20, counters=False, timing=dataclasses.replace(TimingPlan(), protocol=ISOLATED))
baseline = task.source("c", task.baseline_config)
def src(name):
    s = (HERE / "kernels" / name).read_text() if name != "baseline" else baseline
    return s
cand = src(kv.get("cand", "honest.c"))
parent = src(kv.get("parent", "honest.c"))
if "spin" in kv:
    parent = f"#define KG_SPIN {kv['spin']}\n" + parent
if "cspin" in kv:
    cand = f"#define KG_SPIN {kv['cspin']}\n" + cand
with open(out, "a") as f:
    for i in range(n):
        t0 = time.time()
        if mode == "figure":
            v = loop.evaluate(task, backend, target, cand, baseline)
        elif mode == "pair":  # a fresh figure for the parent's code (kept over the baseline), then the attack
            g = loop.evaluate(task, backend, target, src(kv["gen0"]) if "gen0" in kv else parent.replace("#define KG_SPIN", "#define KG_UNUSED", 1) if "spin" in kv else parent, baseline)
            if g.outcome.value != "kept":
                print("figure not kept:", g.reason[:200], flush=True); continue
            kv["F"], kv["M"] = str(g.speedup), str(g.profile.median_ns)
            v = loop.evaluate(task, backend, target, cand, parent, baseline_source=baseline,
                              parent_over_baseline=g.speedup, parent_mark_ns=g.profile.median_ns)
        else:
            v = loop.evaluate(task, backend, target, cand, parent, baseline_source=baseline,
                              parent_over_baseline=float(kv["F"]),
                              parent_mark_ns=float(kv["M"]) if "M" in kv else None)
        p = v.profile
        rec = dict(mode=mode, i=i, kv=dict(kv), beside=loop.BASELINE_IN_THE_COMPARISON, outcome=v.outcome.value,
                   judged=v.judged, speedup=v.speedup, over_baseline=v.over_baseline, reason=v.reason,
                   cand_ns=p.median_ns if p else None, parent_ns=p.parent_median_ns if p else None,
                   ref_ns=p.reference_median_ns if p else None, secs=round(time.time() - t0, 1))
        f.write(json.dumps(rec) + "\n"); f.flush()
        print(rec["outcome"], rec["judged"], rec["speedup"], rec["over_baseline"], rec["cand_ns"], rec["parent_ns"], rec["ref_ns"], rec["secs"], "|", (v.reason or "")[:260], flush=True)
