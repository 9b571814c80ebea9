"""TASK CONFIG: one isolated profile against itself; as each kernel's child closes, how much of each
shared file it had mapped on huge pages (/proc/PID/smaps: Rss and ShmemPmdMapped), and the median.
Usage: smaps.py TASK CONFIG"""
import sys, tempfile
from dataclasses import replace
from pathlib import Path
import kernelgraph.agent.backends.isolated as iso
from kernelgraph.agent.backends.c import CBackend
from kernelgraph.agent.backends.timing import ISOLATED
from kernelgraph.agent.targets import get_target
from kernelgraph.agent.tasks import get_task
from kernelgraph.bench.configs import checked_configs
from kernelgraph.bench.sandbox import BENCH_TIMING
close = iso.KernelServer.close
def dump(self):
    text = open(f"/proc/{self.kernel_pid()}/smaps").read().split("\n")
    for i, line in enumerate(text):
        if line.endswith(".bin"):
            got = {l.split(":")[0]: l.split()[1] for l in text[i + 1 : i + 25] if l.startswith(("Rss", "ShmemPmdMapped"))}
            print(line.split()[-1].rsplit("/", 1)[-1], got, "kB")
    close(self)
iso.KernelServer.close = dump
task = get_task(sys.argv[1]); source = task.source("c", checked_configs(task)[sys.argv[2]]); target = get_target("cpu-x86-64-v2")
with tempfile.TemporaryDirectory() as cache:
    b = CBackend(cache_dir=Path(cache), counters=False, timing=replace(BENCH_TIMING, protocol=ISOLATED))
    print("median us", b.profile(task, source, target, parent_source=source).median_ns / 1e3)
