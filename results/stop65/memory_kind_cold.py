"""Stop 65: does the kind of memory move an honest kernel's time on this host (AMD Zen 5), from the
declared cold state? One process pinned to CPU 0, no sandbox, calls the kernel on a fresh variant of
its inputs each call, with every array flushed from the caches before the call (as both protocols
do), the arrays either in anonymous memory (the in-process child's staggered arena, huge pages
advised) or in two files on a tmpfs mounted huge=within_size, whole huge pages long (as the isolated
protocol's: inputs written through one shared mapping and read by the kernel through a second,
read-only one; outputs through one shared mapping). Modes interleaved call by call. Timed by the
thread's CPU time. With --kinds-all, also anonymous memory and a tmpfs on 4 KiB pages, and anonymous huge pages\nfirst touched in a random order.
Output: memory_kind_cold.out. Usage: python memory_kind_cold.py [--kinds-all] CALLS task:config ...
(as root: mounts a tmpfs)"""

import ctypes
import mmap
import random
import os
import subprocess
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

import numpy as np

from kernelgraph.agent.backends._child import HUGE_PAGE, _staggered_arrays, cache_flusher, fill_sentinel, variant_factors, write_variant
from kernelgraph.agent.backends.c import TIMING_SEED, CBackend
from kernelgraph.agent.backends.isolated import _views, buffer_layout, file_bytes
from kernelgraph.agent.backends.native import timed_call_library
from kernelgraph.agent.backends.timing import IN_PROCESS
from kernelgraph.agent.evaluator import make_input_sets, output_specs
from kernelgraph.agent.targets import get_target
from kernelgraph.agent.tasks import get_task
from kernelgraph.bench.configs import checked_configs
from kernelgraph.bench.sandbox import BENCH_TIMING

os.sched_setaffinity(0, {0})
flush = cache_flusher(str(timed_call_library()))
ALL = sys.argv[1] == "--kinds-all"
if ALL:
    sys.argv.pop(1)
calls = int(sys.argv[1])
target = get_target("cpu-x86-64-v2")
mnt = Path(tempfile.mkdtemp(prefix="kg-memkind-"))
subprocess.run(["mount", "-t", "tmpfs", "-o", "size=2g,huge=within_size", "kg-memkind", str(mnt)], check=True)
small = Path(tempfile.mkdtemp(prefix="kg-memkind-4k-"))  # --kinds all: a tmpfs of 4 KiB pages too
subprocess.run(["mount", "-t", "tmpfs", "-o", "size=2g,huge=never", "kg-memkind-4k", str(small)], check=True)


def anonymous(nbytes: int, huge: bool, scrambled: bool = False) -> np.ndarray:
    """Anonymous memory from a huge page boundary, on huge pages or on 4 KiB pages (huge pages
    refused); `scrambled`: its huge pages first touched in a random order, so that consecutive
    virtual huge pages are not consecutive physical ones."""
    region = mmap.mmap(-1, nbytes + HUGE_PAGE, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
    region.madvise(mmap.MADV_HUGEPAGE if huge else mmap.MADV_NOHUGEPAGE)
    whole = np.frombuffer(region, dtype=np.uint8)
    start = -whole.ctypes.data % HUGE_PAGE
    used = whole[start : start + nbytes]
    order = list(range(0, nbytes, HUGE_PAGE))
    if scrambled:
        random.Random(65).shuffle(order)
    for at in order:
        used[at] = 0
    return used


def file_mapping(path: Path, nbytes: int, mode: str) -> np.memmap:
    return np.memmap(path, dtype=np.uint8, mode=mode, shape=(file_bytes(nbytes),))


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
            for part, n in (("in", layout.input_bytes), ("out", layout.output_bytes)):
                with open(mnt / f"{cell}-{part}.bin", "wb") as f:
                    f.truncate(file_bytes(n))
            writer = file_mapping(mnt / f"{cell}-in.bin", layout.input_bytes, "r+")
            reader = file_mapping(mnt / f"{cell}-in.bin", layout.input_bytes, "r")
            outputs = file_mapping(mnt / f"{cell}-out.bin", layout.output_bytes, "r+")
            for part, n in (("in", layout.input_bytes), ("out", layout.output_bytes)):
                with open(small / f"{cell}-{part}.bin", "wb") as f:
                    f.truncate(file_bytes(n))
            writer4k = file_mapping(small / f"{cell}-in.bin", layout.input_bytes, "r+")
            reader4k = file_mapping(small / f"{cell}-in.bin", layout.input_bytes, "r")
            outputs4k = file_mapping(small / f"{cell}-out.bin", layout.output_bytes, "r+")
            anon4k_in, anon4k_out = (anonymous(file_bytes(n), huge=False) for n in (layout.input_bytes, layout.output_bytes))
            scrambled_in, scrambled_out = (anonymous(file_bytes(n), huge=True, scrambled=True) for n in (layout.input_bytes, layout.output_bytes))
            ordered_in, ordered_out = (anonymous(file_bytes(n), huge=True) for n in (layout.input_bytes, layout.output_bytes))
            for m in (writer, outputs, writer4k, outputs4k, anon4k_in, anon4k_out, scrambled_in, scrambled_out, ordered_in, ordered_out):
                m[:] = 0
            modes = {
                "anonymous": (anon[: len(base)], anon[: len(base)], anon[len(base):]),
                "tmpfs-files": (_views(writer, layout.inputs), _views(reader, layout.inputs), _views(outputs, layout.outputs)),
            }
            if ALL:
                modes["anonymous-4k"] = (_views(anon4k_in, layout.inputs), _views(anon4k_in, layout.inputs), _views(anon4k_out, layout.outputs))
                modes["anon-ordered"] = (_views(ordered_in, layout.inputs), _views(ordered_in, layout.inputs), _views(ordered_out, layout.outputs))
                modes["anon-scrambled"] = (_views(scrambled_in, layout.inputs), _views(scrambled_in, layout.inputs), _views(scrambled_out, layout.outputs))
                modes["tmpfs-files-4k"] = (_views(writer4k, layout.inputs), _views(reader4k, layout.inputs), _views(outputs4k, layout.outputs))
            fn = ctypes.CDLL(built.artifact).kernel
            fn.restype = None
            factors = variant_factors(max(a.size for a in base.values()), calls * len(modes) + 1, 56)
            cpu: dict[str, list[int]] = {m: [] for m in modes}
            k = 0
            for _ in range(calls):
                for mode, (written, read, outs) in modes.items():
                    for b, buf in zip(base.values(), written):
                        write_variant(b, factors, k, buf)
                    k += 1
                    for o in outs:
                        fill_sentinel(o)
                    for a in list(written) + list(outs):
                        flush(a)
                    args = [ctypes.c_void_p(a.ctypes.data) for a in list(read) + list(outs)]
                    args += [ctypes.c_int(int(s)) for s in sizes]
                    c0 = time.thread_time_ns()
                    fn(*args)
                    cpu[mode].append(time.thread_time_ns() - c0)
            rollup = Path("/proc/self/smaps_rollup").read_text()
            huge = [line for line in rollup.splitlines() if "Huge" in line or "PmdMapped" in line]
            print(f"{name} {label} ({calls} calls a mode, CPU 0, load {os.getloadavg()[0]:.2f}); " + "; ".join(h.split(":")[0] + " " + h.split()[-2] for h in huge if h.split()[-2] != "0"))
            for mode in modes:
                q1, med, q3 = np.percentile(cpu[mode], [25, 50, 75])
                print(f"  {mode:12s} CPU median {med/1e6:7.3f} ms  rel.IQR {(q3-q1)/med:.3f}", flush=True)
            del writer, reader, outputs, writer4k, scrambled_in, scrambled_out, anon4k_in, anon4k_out, reader4k, outputs4k, modes
finally:
    subprocess.run(["umount", "-l", str(mnt)], check=False)
    subprocess.run(["umount", "-l", str(small)], check=False)
