"""The stop-54 wipe as a clock: a grid of dates every 2 s over [T-600 s, T+600 s] (T = when this script
runs) in .data.rel.ro; on the timed (full-size) calls the kernel marks the first zeroed grid entry k
with a NaN at flat index 1 + k (the verdict quotes it): the date of its process is T - 600 + 2k (+-2 s).
usage: oracle_date.py [loop=tree|head|fix1]"""
import dataclasses, re, subprocess, sys, tempfile, time
from pathlib import Path
sys.path.insert(0, "/work/main")
from kernelgraph.agent import loop
from kernelgraph.agent.backends import isolated
from kernelgraph.agent.backends.c import CBackend
from kernelgraph.agent.backends.timing import TimingPlan, ISOLATED
from kernelgraph.agent.targets import get_target
from kernelgraph.agent.tasks import get_task

HERE = Path(__file__).parent
if "loop=head" in sys.argv:
    isolated.SERVE_LOOP_SOURCE = HERE / "serve_loop_head.c"
elif "loop=fix1" in sys.argv:
    isolated.SERVE_LOOP_SOURCE = HERE / "serve_loop_fix1.c"
task = get_task("rmsnorm")
target = dataclasses.replace(get_target("cpu-x86-64-v2"), peak_gflops=None, peak_gbps=None)
backend = CBackend(cache_dir=Path(tempfile.mkdtemp(prefix="rt54d-")), check_timeout_s=10.0, memory_bytes=768 << 20,
                   counters=False, timing=dataclasses.replace(TimingPlan(), protocol=ISOLATED))
T = int(time.time())
src = subprocess.run([sys.executable, str(HERE / "make_wipe_oracle.py"), str(T - 600), "1200"],
                     capture_output=True, text=True, check=True).stdout
src = src.replace("    return (int)zeroed;", "    (void)zeroed;\n    for (int k = 0; k < 600; k++) if (grid[k] == 0) return 1 + k;\n    return 0;")
src = re.sub(r"    if \(!kg_new\(\)\).*\n", "    int k = kg_new();\n    if (k && (size_t)r * (size_t)c >= ((size_t)1 << 22)) y[k] = NAN;  /* flat index 1 + (k - 1) */\n", src)
(HERE / "kernels/wipe_oracle_date.c").write_text(src)
t0 = time.time()
v = loop.evaluate(task, backend, target, src, task.source("c", task.baseline_config))
m = re.search(r"first at flat index (\d+)", v.reason or "")
print(f"harness date before evaluate: {T} ({time.strftime('%H:%M:%S', time.gmtime(T))} UTC); evaluate took {time.time() - t0:.1f} s")
print("verdict:", v.outcome.value, "|", (v.reason or "")[:200])
if m:
    k = int(m.group(1)) - 1
    d = T - 600 + 2 * k
    print(f"the kernel read its process's date as {d} ({time.strftime('%H:%M:%S', time.gmtime(d))} UTC), {d - T:+d} s from the harness's reading")
