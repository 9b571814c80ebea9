import os, sys, tempfile
from dataclasses import replace
from pathlib import Path
from kernelgraph.agent.backends import isolated
from kernelgraph.agent.backends.bubblewrap import Sandbox
from kernelgraph.agent.backends.c import CBackend
from kernelgraph.agent.backends.timing import ISOLATED
from kernelgraph.agent.targets import get_target
from kernelgraph.agent.tasks import get_task
from kernelgraph.bench.configs import checked_configs
from kernelgraph.bench.sandbox import BENCH_TIMING, _evaluate_once
seen = {}
real_call = isolated.KernelServer._call
def call(self, deadline, command=b"c"):
    result = real_call(self, deadline, command)
    if command == b"c" and "done" not in seen:
        pids = self.tree()
        for pid in pids:
            try:
                comm = open(f"/proc/{pid}/comm").read().strip()
                if not comm.startswith("serve-loop"): continue
                status = [l.strip() for l in open(f"/proc/{pid}/status") if l.split(":")[0] in ("THP_enabled","Seccomp","Speculation_Store_Bypass","SpeculationIndirectBranch","NoNewPrivs","Cpus_allowed_list","Uid","NSpid")]
                maps = open(f"/proc/{pid}/smaps").read().split("\n")
                out = []
                cur = None
                for l in maps:
                    if "-" in l.split(" ")[0] and len(l.split()) >= 5:
                        cur = l.split()[-1] if len(l.split()) >= 6 else "[anon]"
                    elif l.startswith(("FilePmdMapped", "ShmemPmdMapped", "AnonHugePages", "Rss", "THPeligible", "KernelPageSize")) and cur and (".bin" in cur or "stack" in cur):
                        out.append(f"{cur.split('/')[-1]} {l.split()[0]} {' '.join(l.split()[1:])}")
                seen[pid] = (comm, status, out)
            except OSError as e:
                seen[pid] = str(e)
        seen["done"] = True
    return result
isolated.KernelServer._call = call
task = get_task("matmul"); source = task.source("c", checked_configs(task)["best-A"])
with tempfile.TemporaryDirectory() as tmp:
    be = CBackend(cache_dir=Path(tmp) / "c", counters=False, sandbox=Sandbox(enabled=sys.argv[1] != "unconfined", seccomp=sys.argv[1] != "noseccomp"), timing=replace(BENCH_TIMING, protocol=ISOLATED))
    r = _evaluate_once(task, get_target("cpu-x86-64-v2"), source, be)
print(sys.argv[1], r["median_ns"] / 1e6)
for pid, v in seen.items():
    if pid == "done": continue
    print(pid, v[0]); print("  ", v[1]); print("  ", "\n   ".join(v[2]))
