import os, sys, tempfile, subprocess, statistics
from dataclasses import replace
from pathlib import Path
sys.argv = ["x", sys.argv[1], "matmul:best-A"]
src = open("results/stop63/handover_probe.py").read()
exec(src[:src.index("with tempfile.TemporaryDirectory() as tmp:\n    backends")])
from kernelgraph.agent.backends import isolated
T = "/sys/kernel/tracing/"
def w(name, text):
    with open(T + name, "w") as f: f.write(text)
marker = os.open(T + "trace_marker", os.O_WRONLY)
real_call = isolated.KernelServer._call
def call(self, deadline, command=b"c"):
    if command == b"c": os.write(marker, b"CALL-START")
    result = real_call(self, deadline, command)
    if command == b"c": os.write(marker, b"CALL-END")
    return result
isolated.KernelServer._call = call
w("buffer_size_kb", "20000"); w("events/sched/sched_switch/enable", "1")
task = get_task("matmul"); source = task.source("c", checked_configs(task)["best-A"])
with tempfile.TemporaryDirectory() as tmp:
    be = {p: CBackend(cache_dir=Path(tmp) / "c", counters=False, timing=replace(BENCH_TIMING, min_trials=CALLS, max_trials=CALLS, protocol=p)) for p in (ISOLATED, IN_PROCESS)}
    built = be[ISOLATED].compile(task, source, target)
    base = make_input_sets(task, (TIMING_SEED,), small=False)[0]
    specs, sizes = output_specs(task, base), list(task.sizes(base).values())
    for rep in range(int(sys.argv[1])):
        w("trace", ""); w("tracing_on", "1")
        iso = _evaluate_once(task, target, source, be[ISOLATED])["median_ns"] / 1e6
        w("tracing_on", "0")
        open(f"/tmp/trace_{rep}.txt", "w").write(open(T + "trace").read())
        stats = subprocess.run([sys.executable, "/tmp/parse_trace.py", f"/tmp/trace_{rep}.txt"], capture_output=True, text=True).stdout.splitlines()[-1]
        inp = _evaluate_once(task, target, source, be[IN_PROCESS])["median_ns"] / 1e6
        plain = harness_run(built.artifact, base, specs, sizes, draw.choice(allowed), "plain") / 1e6
        print(f"rep {rep}: isolated {iso:.3f} in-process {inp:.3f} plain {plain:.3f} | {stats[:160]}", flush=True)
w("events/sched/sched_switch/enable", "0")
