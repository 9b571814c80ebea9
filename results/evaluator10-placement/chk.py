import time, numpy as np, ctypes
from kernelgraph.agent.tasks.histogram import inputs_at, reference, FULL
from kernelgraph.agent.backends.isolated import _same_bytes
inp = inputs_at(0, (FULL,))
x = inp["x"]; y = x.copy()
def tm(f, n=10):
    ts=[]
    for _ in range(n):
        t=time.perf_counter(); f(); ts.append(time.perf_counter()-t)
    return f"{np.median(ts)*1e3:.2f} ms"
print(x.shape, x.dtype, x.nbytes/1e6)
print("reference", tm(lambda: reference(inp)))
print("same_bytes", tm(lambda: _same_bytes(x, y)))
libc = ctypes.CDLL(None); libc.memcmp.restype = ctypes.c_int
libc.memcmp.argtypes=[ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t]
print("memcmp", tm(lambda: libc.memcmp(x.ctypes.data, y.ctypes.data, x.nbytes)))
print("copyto", tm(lambda: np.copyto(y, x)))
print("readback", tm(lambda: int(y.view(np.uint8)[::64].max())))
