"""Does a cold TLB explain the isolated protocol's slower memory-bound cells (stop 59: spmv_csr
x1.056, transpose best-A x1.043)? In-process, the cold-state flush runs in the kernel's own address
space just before the call, so every page of its arrays is in the TLB when it starts; isolated, the
evaluator flushes through its own mapping, and the child's translations are whatever survived.
Plain Python harness (as the in-process child, unconfined, the project's flush), per call:
  warm-tlb: flush, call;   cold-tlb: flush, read one byte of each 4 KiB page of a 256 MiB
  scratch on small pages (the TLB's entries replaced; 64 KiB of cache lines), call.
Wall time per call, 30 calls per repeat after 3 warm-up, arms alternating per repeat.
Each run's median and its arena's huge pages are printed too: added after tlb_probe.out (the
other outputs have them; tlb_probe_matmul.out keeps the summary lines only).
Usage: python tlb_probe.py REPEATS task:config ..."""

import mmap
import re
import statistics
import sys
import time

import numpy as np

from kernelgraph.agent.backends._child import _staggered_arrays, cache_flusher, fill_sentinel, variant_factors, write_variant
from kernelgraph.agent.backends.c import TIMING_SEED, CBackend
from kernelgraph.agent.backends.native import timed_call_library
from kernelgraph.agent.evaluator import make_input_sets, output_specs
from kernelgraph.agent.targets import get_target
from kernelgraph.agent.tasks import get_task
from kernelgraph.bench.configs import checked_configs
import ctypes, tempfile
from pathlib import Path

WARMUP, CALLS = 3, 30
flush = cache_flusher(str(timed_call_library()))
scratch = mmap.mmap(-1, 256 << 20)
scratch.madvise(mmap.MADV_NOHUGEPAGE)
pages = np.frombuffer(scratch, dtype=np.uint8)
pages[::4096] = 1  # faulted in
stride = pages[::4096]


def thrash():
    return int(stride.sum())


def huge_kb():
    return int(open("/proc/self/smaps_rollup").read().split("AnonHugePages:")[1].split()[0])


def run(artifact, base, specs, sizes, cold_tlb, seed):
    arrays = _staggered_arrays([(a.shape, a.dtype) for a in base.values()] + [(tuple(s.shape), s.dtype) for s in specs])
    bufs, outs = arrays[: len(base)], arrays[len(base):]
    fn = ctypes.CDLL(artifact).kernel
    fn.restype = None
    args = [ctypes.c_void_p(a.ctypes.data) for a in bufs + outs] + [ctypes.c_int(int(s)) for s in sizes]
    factors = variant_factors(max(a.size for a in base.values()), WARMUP + CALLS, seed)
    times = []
    for call in range(WARMUP + CALLS):
        for b, buf in zip(base.values(), bufs):
            write_variant(b, factors, call, buf)
        for o in outs:
            fill_sentinel(o)
        for a in bufs + outs:
            flush(a)
        if cold_tlb:
            thrash()
        t0 = time.perf_counter_ns()
        fn(*args)
        if call >= WARMUP:
            times.append(time.perf_counter_ns() - t0)
    start = arrays[0].ctypes.data
    return statistics.median(times), arena_huge(start)


def arena_huge(address):
    """AnonHugePages / Rss (kB) of the mapping holding `address`."""
    lines = open("/proc/self/smaps").read().split("\n")
    for i, line in enumerate(lines):
        m = re.match(r"([0-9a-f]+)-([0-9a-f]+) ", line)
        if m and int(m.group(1), 16) <= address < int(m.group(2), 16):
            got = {l.split(":")[0]: int(l.split()[1]) for l in lines[i + 1 : i + 25] if l.startswith(("Rss:", "AnonHugePages:"))}
            return got.get("AnonHugePages", 0), got.get("Rss", 0)
    return None


target = get_target("cpu-x86-64-v2")
repeats = int(sys.argv[1])
with tempfile.TemporaryDirectory() as tmp:
    backend = CBackend(cache_dir=Path(tmp), counters=False)
    for cell in sys.argv[2:]:
        name, label = cell.split(":")
        task = get_task(name)
        source = task.source("c", checked_configs(task)[label])
        built = backend.compile(task, source, target)
        base = make_input_sets(task, (TIMING_SEED,), small=False)[0]
        specs, sizes = output_specs(task, base), list(task.sizes(base).values())
        mb = sum(a.nbytes for a in base.values()) / 1e6 + sum(int(np.prod(s.shape)) * np.dtype(s.dtype).itemsize for s in specs) / 1e6
        got = {"warm-tlb": [], "cold-tlb": []}
        for r in range(repeats):
            arms = ("warm-tlb", "cold-tlb") if r % 2 == 0 else ("cold-tlb", "warm-tlb")
            for arm in arms:
                median, huge = run(built.artifact, base, specs, sizes, arm == "cold-tlb", 1000 + r)
                got[arm].append(median)
                print(f"  {arm} {median / 1e3:.0f} us, arena AnonHugePages/Rss kB {huge}", flush=True)
        ratios = [c / w for c, w in zip(got["cold-tlb"], got["warm-tlb"])]
        print(f"{name} {label} ({mb:.0f} MB, omp {'omp' in source}): warm {statistics.median(got['warm-tlb'])/1e3:.0f} us, "
              f"cold {statistics.median(got['cold-tlb'])/1e3:.0f} us, paired cold/warm median {statistics.median(ratios):.3f} "
              f"[{' '.join(f'{x:.3f}' for x in ratios)}]; AnonHugePages {huge_kb()} kB", flush=True)
