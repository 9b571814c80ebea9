"""Does the kind of memory the inputs sit in move an honest kernel's time, outside any sandbox?

One process pinned to CPU 0 calls the kernel on a fresh variant of its inputs each call, the inputs
(laid out by `buffer_layout`, as both protocols lay them) either in anonymous memory (numpy's own,
as the in-process child) or in a file on a tmpfs mounted huge=within_size, written through one
shared mapping and read by the kernel through a second, read-only one (as the isolated protocol).
Modes interleaved call by call. Timed by the thread's CPU time. Run as root (mounts a tmpfs).
Usage: python memory_kind.py CALLS task:config ...
"""

import ctypes
import os
import subprocess
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

import numpy as np

from kernelgraph.agent.backends._child import fill_sentinel, variant_factors, write_variant, _staggered_arrays
from kernelgraph.agent.backends.c import TIMING_SEED, CBackend
from kernelgraph.agent.backends.isolated import buffer_layout, _views
from kernelgraph.agent.backends.timing import IN_PROCESS
from kernelgraph.agent.evaluator import make_input_sets, output_specs
from kernelgraph.agent.targets import get_target
from kernelgraph.agent.tasks import get_task
from kernelgraph.bench.configs import checked_configs
from kernelgraph.bench.sandbox import BENCH_TIMING

os.sched_setaffinity(0, {0})
calls = int(sys.argv[1])
target = get_target("cpu-x86-64-v3")
mnt = Path(tempfile.mkdtemp(prefix="kg-memkind-"))
subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1g,huge=within_size", "kg-memkind", str(mnt)], check=True)
try:
    with tempfile.TemporaryDirectory() as tmp:
        backend = CBackend(cache_dir=Path(tmp), counters=False, timing=replace(BENCH_TIMING, protocol=IN_PROCESS))
        for cell in sys.argv[2:]:
            name, label = cell.split(":")
            task = get_task(name)
            built = backend.compile(task, task.source("c", checked_configs(task)[label]), target)
            base = make_input_sets(task, (TIMING_SEED,), small=False)[0]
            specs = output_specs(task, base)
            sizes = list(task.sizes(base).values())
            anon = _staggered_arrays([(a.shape, a.dtype) for a in base.values()] + [(tuple(s.shape), s.dtype) for s in specs])
            layout = buffer_layout(base, specs)
            path = mnt / f"{name}-{label}.bin"
            with open(path, "wb") as f:
                f.truncate(layout.input_bytes)
            writer = np.memmap(path, dtype=np.uint8, mode="r+", shape=(layout.input_bytes,))
            reader = np.memmap(path, dtype=np.uint8, mode="r", shape=(layout.input_bytes,))
            modes = {
                "anonymous": (anon[: len(base)], anon[: len(base)], anon[len(base):]),
                "tmpfs-file": (_views(writer, layout.inputs), _views(reader, layout.inputs), anon[len(base):]),
            }
            fn = ctypes.CDLL(built.artifact).kernel
            fn.restype = None
            factors = variant_factors(max(a.size for a in base.values()), calls * len(modes) + 1, 56)
            cpu = {m: [] for m in modes}
            k = 0
            for _ in range(calls):
                for mode, (written, read, outs) in modes.items():
                    for b, buf in zip(base.values(), written):
                        write_variant(b, factors, k, buf)
                    k += 1
                    for o in outs:
                        fill_sentinel(o)
                    args = [ctypes.c_void_p(a.ctypes.data) for a in list(read) + list(outs)]
                    args += [ctypes.c_int(int(s)) for s in sizes]
                    c0 = time.thread_time_ns()
                    fn(*args)
                    cpu[mode].append(time.thread_time_ns() - c0)
            print(f"{name} {label} ({calls} calls a mode, CPU 0, load {os.getloadavg()[0]:.2f})")
            for mode in modes:
                q1, med, q3 = np.percentile(cpu[mode], [25, 50, 75])
                print(f"  {mode:12s} CPU median {med/1e6:7.3f} ms  rel.IQR {(q3-q1)/med:.3f}", flush=True)
            del writer, reader
finally:
    subprocess.run(["umount", "-l", str(mnt)], check=False)
