"""What the work just before a call does to an honest kernel's time, outside any sandbox.

One process, pinned to CPU 0, calls the kernel on a fresh variant of its inputs each call (numpy's
`write_variant`, as both protocols write them) with the outputs filled, and times each call by its
thread's CPU time and the wall clock. Before the call, per mode:
  in-process   nothing more (the in-process child's order)
  read-back    one byte of every cache line of the inputs read back (the isolated evaluator's)
  pause-Xus    a sleep of X us (the isolated hand-over's gap, without the read)
  both         read-back then a 200 us sleep
Modes are interleaved call by call (round robin), so drift hits all alike.
Usage: python per_call_work.py CALLS task:config ...
"""

import ctypes
import os
import statistics
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

import numpy as np

from kernelgraph.agent.backends._child import fill_sentinel, variant_factors, write_variant, _staggered_arrays
from kernelgraph.agent.backends.c import TIMING_SEED, CBackend
from kernelgraph.agent.backends.timing import IN_PROCESS
from kernelgraph.agent.evaluator import make_input_sets, output_specs
from kernelgraph.agent.targets import get_target
from kernelgraph.agent.tasks import get_task
from kernelgraph.bench.configs import checked_configs
from kernelgraph.bench.sandbox import BENCH_TIMING

os.sched_setaffinity(0, {0})
calls = int(sys.argv[1])
target = get_target("cpu-x86-64-v3")


def read_back(buffers):
    for b in buffers:
        int(b.view(np.uint8).ravel()[::64].max())


MODES = {
    "in-process": lambda bufs: None,
    "read-back": read_back,
    "pause-200us": lambda bufs: time.sleep(200e-6),
    "pause-2ms": lambda bufs: time.sleep(2e-3),
    "both": lambda bufs: (read_back(bufs), time.sleep(200e-6)),
}

with tempfile.TemporaryDirectory() as tmp:
    backend = CBackend(cache_dir=Path(tmp), counters=False, timing=replace(BENCH_TIMING, protocol=IN_PROCESS))
    for cell in sys.argv[2:]:
        name, label = cell.split(":")
        task = get_task(name)
        built = backend.compile(task, task.source("c", checked_configs(task)[label]), target)
        base = make_input_sets(task, (TIMING_SEED,), small=False)[0]
        specs = output_specs(task, base)
        sizes = list(task.sizes(base).values())
        arrays = _staggered_arrays([(a.shape, a.dtype) for a in base.values()] + [(tuple(s.shape), s.dtype) for s in specs])
        bufs, outs = arrays[: len(base)], arrays[len(base):]
        fn = ctypes.CDLL(built.artifact).kernel
        fn.restype = None
        args = [ctypes.c_void_p(a.ctypes.data) for a in bufs + outs] + [ctypes.c_int(int(s)) for s in sizes]
        factors = variant_factors(max(a.size for a in base.values()), calls * len(MODES) + 1, 56)
        cpu = {m: [] for m in MODES}
        wall = {m: [] for m in MODES}
        k = 0
        for _ in range(calls):
            for mode, before in MODES.items():
                for b, buf in zip(base.values(), bufs):
                    write_variant(b, factors, k, buf)
                k += 1
                for o in outs:
                    fill_sentinel(o)
                before(bufs)
                c0, t0 = time.thread_time_ns(), time.perf_counter_ns()
                fn(*args)
                wall[mode].append(time.perf_counter_ns() - t0)
                cpu[mode].append(time.thread_time_ns() - c0)
        print(f"{name} {label} ({calls} calls a mode, CPU 0, load {os.getloadavg()[0]:.2f}, "
              f"NPY_DISABLE_CPU_FEATURES={os.environ.get('NPY_DISABLE_CPU_FEATURES', '')!r})")
        for mode in MODES:
            q1, med, q3 = np.percentile(cpu[mode], [25, 50, 75])
            print(f"  {mode:12s} CPU median {med/1e6:7.3f} ms  rel.IQR {(q3-q1)/med:.3f}  wall median "
                  f"{statistics.median(wall[mode])/1e6:7.3f} ms", flush=True)
