"""Each kernel thread's allowed CPUs after loading, per config."""
import sys, tempfile, os
from dataclasses import replace
from pathlib import Path
import kernelgraph.agent.backends.isolated as iso
from kernelgraph.agent.backends.c import CBackend
from kernelgraph.agent.backends.timing import ISOLATED
from kernelgraph.agent.targets import get_target
from kernelgraph.agent.tasks import get_task
from kernelgraph.bench.configs import checked_configs
seen = {}
orig = iso.KernelServer.call
def call(self, deadline, command=b"c"):
    r = orig(self, deadline, command)
    if command == b"c" and id(self) not in seen:
        pid = self.kernel_pid()
        seen[id(self)] = [(t, open(f"/proc/{pid}/task/{t}/status").read().split("Cpus_allowed_list:")[1].split()[0]) for t in os.listdir(f"/proc/{pid}/task")]
    return r
iso.KernelServer.call = call
target = get_target("cpu-x86-64-v2")
for name, label in [("matmul", "best-A"), ("matmul", "best-B"), ("layernorm", "best-B"), ("matvec", "baseline")]:
    task = get_task(name); source = task.source("c", checked_configs(task)[label])
    with tempfile.TemporaryDirectory() as cache:
        b = CBackend(cache_dir=Path(cache), counters=False, timing=replace(iso_t := __import__("kernelgraph.bench.sandbox", fromlist=["x"]).BENCH_TIMING, protocol=ISOLATED))
        seen.clear(); b.profile(task, source, target, parent_source=source)
        print(name, label, checked_configs(task)[label], list(seen.values()))
