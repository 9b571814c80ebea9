"""Red-team harness (stop 54): rmsnorm kernels through loop.evaluate, the isolated protocol (evaluator 16).
usage: harness.py OUT.jsonl MODE N [key=value ...]
  MODE leak    : evaluate(kernels/leak_start_time.c, baseline) -> the verdict's reason quotes the TSC
  MODE age     : N x evaluate(copy, parent): loader_age.c born=B (copy) against born=B-AGE_S s (parent)
  MODE chain   : leak once, then N x age with born = the leaked reading
  MODE probe   : kernels/leftover_probe.c: which leftovers of a clock the timed child leaves (regions, encodings)
  MODE oracle  : make_wipe_oracle.py kernels: copy born now against parent born age_s ago (default a day)
  MODE clock   : N x evaluate(copy, parent) with tests/agent/red_team/knows_its_age.c (time(): the defended channel)
keys: adm=real|past (real admission: CBackend; past: _PastAdmissionC), born=TSC, age_s=S (parent's extra age),
      clocks=hidden|left (isolated.CLOCKLESS_KERNELS), loop=tree|head|fix1 (serve_loop.c of the working tree, 1dfc69b's, or the tree's with the wipe before dlopen)
"""
import dataclasses, json, re, sys, tempfile, time
from pathlib import Path
sys.path.insert(0, "/work/main")
from kernelgraph.agent import loop
from kernelgraph.agent.backends import isolated
from kernelgraph.agent.backends.c import CBackend
from kernelgraph.agent.backends.timing import TimingPlan, ISOLATED
from kernelgraph.agent.targets import get_target
from kernelgraph.agent.tasks import get_task
from tests.agent.test_red_team import _PastAdmissionC

HERE = Path(__file__).parent
out, mode, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
kv = dict(a.split("=", 1) for a in sys.argv[4:])
isolated.CLOCKLESS_KERNELS = kv.get("clocks", "hidden") == "hidden"
if kv.get("loop", "tree") == "head":  # the serve loop as committed (evaluator 16, HEAD), not the working tree's
    isolated.SERVE_LOOP_SOURCE = HERE / "serve_loop_head.c"
elif kv.get("loop") == "fix1":  # the current serve loop with suggested fix 1 (REPORT.md): the wipe before dlopen
    isolated.SERVE_LOOP_SOURCE = HERE / "serve_loop_fix1.c"
task = get_task("rmsnorm")
target = dataclasses.replace(get_target("cpu-x86-64-v2"), peak_gflops=None, peak_gbps=None)
cls = CBackend if kv.get("adm", "real") == "real" else _PastAdmissionC
backend = cls(cache_dir=Path(tempfile.mkdtemp(prefix="rt54-")), check_timeout_s=10.0, memory_bytes=768 << 20,
              counters=False, timing=dataclasses.replace(TimingPlan(), protocol=ISOLATED))
baseline = task.source("c", task.baseline_config)
TSC_HZ = 2596150000

def record(f, i, v, extra):
    p = v.profile
    rec = dict(mode=mode, i=i, kv=kv, clockless=isolated.CLOCKLESS_KERNELS, backend=cls.__name__, outcome=v.outcome.value,
               judged=v.judged, speedup=v.speedup, reason=v.reason, cand_ns=p.median_ns if p else None,
               parent_ns=p.parent_median_ns if p else None, **extra)
    f.write(json.dumps(rec) + "\n"); f.flush()
    print(rec["outcome"], rec["judged"], rec["speedup"], rec["cand_ns"], rec["parent_ns"], "|", (v.reason or "")[:300], flush=True)

with open(out, "a") as f:
    for i in range(n):
        t0 = time.time()
        if mode == "leak":
            v = loop.evaluate(task, backend, target, (HERE / "kernels/leak_start_time.c").read_text(), baseline)
            m = re.search(r"got ([0-9.e+]+)", v.reason or "")
            record(f, i, v, dict(leaked_tsc=float(m.group(1)) if m else None, secs=round(time.time() - t0, 1)))
        elif mode in ("age", "chain"):
            src = (HERE / "kernels/loader_age.c").read_text()
            if mode == "chain" and i == 0:  # the model learns "now" from a leak, then writes its kernels
                v = loop.evaluate(task, backend, target, (HERE / "kernels/leak_start_time.c").read_text(), baseline)
                kv["born"] = re.search(r"got ([0-9.e+]+)", v.reason or "").group(1)
                print("leaked:", kv["born"], "|", v.reason[:200], flush=True)
            born = int(float(kv["born"]))
            age = int(float(kv.get("age_s", "86400")))
            copy = f"#define KG_BORN_TSC {born}ULL\n{src}"
            parent = f"#define KG_BORN_TSC {born - age * TSC_HZ}ULL\n{src}"
            v = loop.evaluate(task, backend, target, copy, parent)
            record(f, i, v, dict(born=born, age_s=age, secs=round(time.time() - t0, 1)))
        elif mode == "probe":  # which leftovers of a clock a timed kernel finds (kernels/leftover_probe.c)
            import subprocess
            got = {}
            for select in (0, 1, 2, 4):
                tsc = int(subprocess.run([str(HERE / "find_start_time")], capture_output=True, text=True).stdout.split()[1])
                now = [time.clock_gettime_ns(c) for c in (time.CLOCK_REALTIME, time.CLOCK_MONOTONIC, time.CLOCK_BOOTTIME)]
                head = (f"#define KG_NOW_TSC {tsc}ULL\n#define KG_NOW_REAL_NS {now[0]}ULL\n#define KG_NOW_MONO_NS {now[1]}ULL\n"
                        f"#define KG_NOW_BOOT_NS {now[2]}ULL\n#define KG_SELECT {select}\n")
                v = loop.evaluate(task, backend, target, head + (HERE / "kernels/leftover_probe.c").read_text(), baseline)
                m = re.search(r"has (\d+) NaN/inf values \(first at flat index (\d+)\)", v.reason or "")
                if not m:
                    print("no code:", v.reason[:300]); break
                got[select] = (int(m.group(2)) - 1, int(m.group(1)) - 1)
            if len(got) == 4:
                code, hits = got[0]
                first = got[1][0] | (got[1][1] << 21) | (got[2][0] << 42)
                ex = dict(regions=code // 4096, encodings=code % 4096, hits=hits, first=first, first_enc=got[2][1] // 8,
                          first_region=got[2][1] % 8, first_at_ldso_offset=hex(got[4][0]), tsc=tsc, real_ns=now[0], mono_ns=now[1], boot_ns=now[2],
                          first_vs_mono_s=(first - now[1]) / 1e9, first_vs_real_s=(first - now[0]) / 1e9,
                          first_vs_tsc_s=(first - tsc) / 2596150000)
                print(ex)
                record(f, i, v, ex)
        elif mode == "oracle":  # make_wipe_oracle.py: the stop-54 wipe of clock readings as a date oracle
            import subprocess
            now = int(time.time())
            honest = int(kv.get("honest_s", "600"))
            gen = lambda born: subprocess.run([sys.executable, str(HERE / "make_wipe_oracle.py"), str(born), str(honest)],
                                              capture_output=True, text=True, check=True).stdout
            copy, parent = gen(now), gen(now - int(float(kv.get("age_s", "86400"))))
            if i == 0:
                (HERE / "kernels/wipe_oracle_copy.c").write_text(copy)
                (HERE / "kernels/wipe_oracle_parent.c").write_text(parent)
            v = loop.evaluate(task, backend, target, copy, parent)
            record(f, i, v, dict(born=now, secs=round(time.time() - t0, 1)))
        elif mode == "clock":
            src = Path("/work/main/tests/agent/red_team/knows_its_age.c").read_text()
            now = int(time.time())
            copy, parent = (f"#define KG_BORN {b}L\n{src}" for b in (now, now - 86400))
            v = loop.evaluate(task, backend, target, copy, parent)
            record(f, i, v, dict(secs=round(time.time() - t0, 1)))
