import sys, tempfile, time, os, ctypes, glob, statistics, subprocess
from pathlib import Path
import numpy as np
from kernelgraph.agent.backends.c import CBackend
from kernelgraph.agent.backends._child import staggered_offsets, _staggered_arrays, variant_factors, write_variant
from kernelgraph.agent.targets import get_target
from kernelgraph.agent.tasks import get_task
from kernelgraph.bench.configs import checked_configs
task = get_task(sys.argv[1]); label = sys.argv[2]
source = task.source("c", checked_configs(task)[label]); target = get_target("cpu-x86-64-v2")
cache = tempfile.mkdtemp()
b = CBackend(cache_dir=Path(cache), counters=False)
r = b.compile(task, source, target)
so = glob.glob(cache + "/**/kernel.so", recursive=True)[0]
fn = ctypes.CDLL(so).kernel; fn.restype = None
base = task.make_inputs(0, False)
specs = [(a.shape, a.dtype) for a in base.values()] + [(tuple(s), np.dtype(d)) for s, d in [(v, "f4") for v in task.output_shapes(base).values()]]
sizes = list(task.sizes(base).values())
print("sizes", sizes, specs)
def layout_np():
    return _staggered_arrays(specs)
def layout_shm():
    d = "/tmp/hp2"; os.makedirs(d, exist_ok=True)
    subprocess.run(["mount","-t","tmpfs","-o","size=200m,huge=within_size","kgx",d], check=True)
    nbytes = [int(np.prod(s))*np.dtype(t).itemsize for s, t in specs]
    offs, size = staggered_offsets(nbytes)
    fd = os.open(d+"/s.bin", os.O_RDWR|os.O_CREAT, 0o666); os.ftruncate(fd, size)
    m = np.memmap(d+"/s.bin", dtype=np.uint8, mode="r+", shape=(size,))
    return [m[o:o+n].view(t).reshape(s) for o, n, (s, t) in zip(offs, nbytes, specs)]
factors = variant_factors(max(a.size for a in base.values()), 1000, 1)
TT = []
expected = {k: np.empty_like(v) for k, v in base.items()}
def run(arrs, n=40, other=None, copy=False, check='', touch=False):
    ins, outs = arrs[:len(base)], arrs[len(base):]
    ts = []
    for call in range(n):
        if copy:
            for (k, bb) in base.items(): write_variant(bb, factors, call, expected[k])
            for k, buf in zip(base, ins): np.copyto(buf, expected[k])
        else:
            for bb, buf in zip(base.values(), ins): write_variant(bb, factors, call, buf)
        for o in outs: o.fill(np.nan)
        if touch:
            tt = time.perf_counter_ns()
            for x in ins: x.reshape(-1).view(np.uint8)[::64].sum()
            TT.append(time.perf_counter_ns() - tt)
        args = [ctypes.c_void_p(a.ctypes.data) for a in ins+outs] + [ctypes.c_int(int(s)) for s in sizes]
        t0 = time.perf_counter_ns(); fn(*args); ts.append(time.perf_counter_ns()-t0)
        if "i" in check:
            for k, buf in zip(base, ins): np.array_equal(buf.reshape(-1).view(np.uint64), expected[k].reshape(-1).view(np.uint64))
        if "o" in check:
            for o in outs: np.isfinite(o).all()
        if "r" in check:
            rows = np.sort(np.random.choice(1536, 64, replace=False)); ref = np.ascontiguousarray(expected["a"].T[rows]); np.allclose(outs[0][rows], ref)
    return statistics.median(ts[5:])/1e3
A = layout_np(); B = layout_shm()
print("np arena addr mod 2M", A[0].ctypes.data % (2<<20), "shm", B[0].ctypes.data % (2<<20))
R = {"v": [], "c": [], "ct": [], "k": []}
for i in range(10):
    for k in R: R[k].append(run(A, copy={"c": True, "m": "mul", "k": "chunktouch"}.get(k[0], False), touch="t" in k))
print("touch cost us", statistics.median(TT) / 1e3); print({k: (round(statistics.median(v)), [round(x) for x in v]) for k, v in R.items()})
subprocess.run(["umount","-l","/tmp/hp2"])
