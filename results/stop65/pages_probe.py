"""Stop 65: what pages does each protocol's kernel process compute on? While a cell is evaluated in
each protocol, sample /proc/<pid>/smaps_rollup of every process running serve_loop (the isolated
protocol's children) or _child.py (the in-process protocol's child) and keep each pid's largest
AnonHugePages, ShmemPmdMapped, FilePmdMapped and Rss. Output: pages_probe.out.
Usage: python pages_probe.py task:config ...   (as root)"""

import re
import sys
import tempfile
import threading
import time
from dataclasses import replace
from pathlib import Path

from kernelgraph.agent.backends.bubblewrap import Sandbox
from kernelgraph.agent.backends.c import CBackend
from kernelgraph.agent.backends.timing import IN_PROCESS, ISOLATED
from kernelgraph.agent.targets import get_target
from kernelgraph.agent.tasks import get_task
from kernelgraph.bench.configs import checked_configs
from kernelgraph.bench.sandbox import BENCH_TIMING, _evaluate_once

FIELDS = ("Rss", "AnonHugePages", "ShmemPmdMapped", "FilePmdMapped")


def watch(stop: threading.Event, seen: dict[int, dict[str, int]]) -> None:
    while not stop.is_set():
        for proc in Path("/proc").iterdir():
            if not proc.name.isdigit():
                continue
            try:
                cmd = (proc / "cmdline").read_bytes()
                if b"serve-loop" not in cmd and b"_child.py" not in cmd or b"bwrap" in cmd.split(b"\0")[0]:
                    continue
                text = (proc / "smaps_rollup").read_text()
            except OSError:
                continue
            now = {f: int(m.group(1)) for f in FIELDS if (m := re.search(rf"^{f}:\s+(\d+) kB", text, re.M))}
            old = seen.setdefault(int(proc.name), {"kind": cmd.split(b"\0")[0][-30:].decode()})
            for f, v in now.items():
                old[f] = max(old.get(f, 0), v)
        time.sleep(0.02)


target = get_target("cpu-x86-64-v2")
with tempfile.TemporaryDirectory() as tmp:
    for cell in sys.argv[1:]:
        name, label = cell.split(":")
        task = get_task(name)
        source = task.source("c", checked_configs(task)[label])
        for protocol in (ISOLATED, IN_PROCESS):
            backend = CBackend(cache_dir=Path(tmp) / cell / protocol, counters=False, sandbox=Sandbox(),
                               timing=replace(BENCH_TIMING, protocol=protocol))
            seen: dict[int, dict[str, int]] = {}
            stop = threading.Event()
            t = threading.Thread(target=watch, args=(stop, seen))
            t.start()
            r = _evaluate_once(task, target, source, backend)
            stop.set()
            t.join()
            print(f"{cell} {protocol}: median {r['median_ns'] / 1e3:.1f} us", flush=True)
            for pid, v in seen.items():
                print(f"   {pid} {v}", flush=True)
