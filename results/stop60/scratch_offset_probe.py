"""Does where a kernel's own allocation lands move its time? matmul best-A mallocs a transposed copy
of b (n=300: 360 KB) every call; this plain harness (pinned, every line flushed before each call as
both protocols do) runs the same source with malloc/free replaced by a scratch buffer at a chosen
offset from a huge page, the arrays in the protocols' staggered layout. Offsets rotate per repeat.
Usage: python scratch_offset_probe.py REPEATS"""

import ctypes
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from kernelgraph.agent.backends._child import _staggered_arrays, cache_flusher, fill_sentinel, variant_factors, write_variant
from kernelgraph.agent.backends.c import TIMING_SEED
from kernelgraph.agent.backends.native import timed_call_library
from kernelgraph.agent.evaluator import make_input_sets, output_specs
from kernelgraph.agent.tasks import get_task
from kernelgraph.bench.configs import checked_configs

OFFSETS = (16, 32, 48, 64, 2064, 4096 - 16, 1 << 20)
task = get_task("matmul")
source = task.source("c", checked_configs(task)["best-A"])
source = source.replace("(float*)malloc(sizeof(float) * (size_t)n * n)", "(float*)kg_scratch").replace("free(bt);", "")
source = "float *kg_scratch;\n" + source
tmp = Path(tempfile.mkdtemp())
(tmp / "k.c").write_text(source)
subprocess.run(["gcc", "-O2", "-fPIC", "-shared", "-fopenmp", "-std=gnu11", "-march=x86-64-v2", str(tmp / "k.c"), "-o", str(tmp / "k.so"), "-lm"], check=True)
lib = ctypes.CDLL(str(tmp / "k.so"))
scratch_ptr = ctypes.c_void_p.in_dll(lib, "kg_scratch")
fn = lib.kernel
fn.restype = None
flush = cache_flusher(str(timed_call_library()))
base = make_input_sets(task, (TIMING_SEED,), small=False)[0]
specs, sizes = output_specs(task, base), list(task.sizes(base).values())
arrays = _staggered_arrays([(a.shape, a.dtype) for a in base.values()] + [(tuple(s.shape), s.dtype) for s in specs])
bufs, outs = arrays[: len(base)], arrays[len(base):]
args = [ctypes.c_void_p(a.ctypes.data) for a in bufs + outs] + [ctypes.c_int(int(s)) for s in sizes]
arena = np.zeros(8 << 20, dtype=np.uint8)
start = -arena.ctypes.data % (2 << 20)
os.sched_setaffinity(0, {0})
results = {o: [] for o in OFFSETS}
for repeat in range(int(sys.argv[1])):
    for offset in OFFSETS[repeat % len(OFFSETS):] + OFFSETS[: repeat % len(OFFSETS)]:
        scratch_ptr.value = arena.ctypes.data + start + offset
        scratch = arena[start + offset : start + offset + 300 * 300 * 4]
        factors = variant_factors(max(a.size for a in base.values()), 33, repeat)
        times = []
        for call in range(33):
            for b, buf in zip(base.values(), bufs):
                write_variant(b, factors, call, buf)
            for o in outs:
                fill_sentinel(o)
            for a in (*bufs, *outs, scratch):
                flush(a)
            t0 = time.perf_counter_ns()
            fn(*args)
            if call >= 3:
                times.append(time.perf_counter_ns() - t0)
        results[offset].append(statistics.median(times))
ref = results[OFFSETS[0]]
for offset in OFFSETS:
    ratios = [v / r for v, r in zip(results[offset], ref)]
    print(f"scratch at huge page + {offset:8d} (mod 64: {offset % 64:2d}): median {statistics.median(results[offset]) / 1e3:7.0f} us, "
          f"paired over +16 {statistics.median(ratios):.3f}", flush=True)
