"""Does the page size behind a kernel's buffers move its time? One kernel timed in-process (the
old protocol's loop: a variant written, outputs filled, the call timed by the wall clock) on the
same staggered layout from two arenas: numpy's (over 4 MiB numpy asks for transparent huge pages,
MADV_HUGEPAGE) and a file mapped MAP_SHARED from the scratch filesystem, as the isolated protocol's
buffers are. Rounds alternate the two, each on a fresh arena; each round 32 timed calls; prints medians per round.
Usage: page_size.py TASK [CONFIG] [ROUNDS]"""
import ctypes, mmap, os, statistics, sys, tempfile, time
import numpy as np
from pathlib import Path
from kernelgraph.agent.backends import _child
from kernelgraph.agent.backends.c import CBackend
from kernelgraph.agent.evaluator import make_input_sets, output_specs
from kernelgraph.agent.targets import get_target
from kernelgraph.agent.tasks import get_task
from kernelgraph.bench.configs import checked_configs

task = get_task(sys.argv[1])
label = sys.argv[2] if len(sys.argv) > 2 else "baseline"
rounds = int(sys.argv[3]) if len(sys.argv) > 3 else 8
source = task.source("c", checked_configs(task)[label])
target = get_target("cpu-x86-64-v2")
built = CBackend(cache_dir=Path(tempfile.mkdtemp())).compile(task, source, target)
fn = _child._bind(built.artifact)
base = make_input_sets(task, (1,), small=False)[0]
specs = [(tuple(s.shape), s.dtype) for s in output_specs(task, base)]
sizes = list(task.sizes(base).values())
all_specs = [(a.shape, a.dtype) for a in base.values()] + specs
nbytes = [int(np.prod(s, dtype=np.int64)) * np.dtype(d).itemsize for s, d in all_specs]
offsets, size = _child.staggered_offsets(nbytes)


def numpy_arena():
    return _child._staggered_arrays(all_specs)


def file_arena():
    f = tempfile.NamedTemporaryFile(dir=tempfile.gettempdir())
    f.truncate(size)
    m = mmap.mmap(f.fileno(), size)
    arena = np.frombuffer(m, dtype=np.uint8)
    file_arena.keep.append((f, m))
    return [arena[o:o + n].view(np.dtype(d)).reshape(s) for o, n, (s, d) in zip(offsets, nbytes, all_specs)]
file_arena.keep = []


def timed(arrays, calls=32, warmup=2):
    ins, outs = arrays[:len(base)], arrays[len(base):]
    factors = _child.variant_factors(max(b.size for b in base.values()), calls + warmup, 7)
    times = []
    for call in range(calls + warmup):
        for b, buf in zip(base.values(), ins):
            _child.write_variant(b, factors, call, buf)
        for o in outs:
            _child.fill_sentinel(o)
        args = _child._args(ins, outs, sizes)
        t0 = time.perf_counter_ns()
        fn(*args)
        if call >= warmup:
            times.append(time.perf_counter_ns() - t0)
    return statistics.median(times)


huge = lambda: int(open("/proc/self/smaps_rollup").read().split("AnonHugePages:")[1].split()[0])
makers = {"numpy (THP)": numpy_arena, "file MAP_SHARED": file_arena}
print(task.name, label, flush=True)
ratios = []
for r in range(rounds):
    order = list(makers) if r % 2 == 0 else list(makers)[::-1]
    med = {name: timed(makers[name]()) for name in order}  # a fresh arena each round: new physical pages
    ratios.append(med["file MAP_SHARED"] / med["numpy (THP)"])
    print(f"round {r}: " + "  ".join(f"{n} {m / 1e6:.3f} ms" for n, m in med.items()) + f"  file/numpy {ratios[-1]:.3f}", flush=True)
print(f"median file/numpy {statistics.median(ratios):.3f}; AnonHugePages kB {huge()}")
