"""Sandbox child: loads one compiled kernel with ctypes and runs it; see agent/backends/sandbox.py.

Run as a script (`python _child.py REQUEST RESULT`): it imports nothing from the project, so a
kernel's crash, exit() or hang takes down only this process. The result is written atomically;
a missing result file means the process died before reporting.
"""

import ctypes
import hashlib
import os
import pickle
import resource
import sys
import time
from typing import Any

import numpy as np


def _vm_size() -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmSize:"):
                return int(line.split()[1]) * 1024
    return 0


def _fresh(spec: Any) -> Any:
    shape, dtype = spec
    out = np.empty(shape, dtype=dtype)
    if out.dtype.kind == "f":
        out.fill(np.nan)
    else:
        out.fill(np.iinfo(out.dtype).min)  # a sentinel no real count or index takes
    return out


def _digest(array: Any) -> str:
    return hashlib.sha256(np.ascontiguousarray(array).tobytes()).hexdigest()


def _bind(path: str) -> Any:
    fn = ctypes.CDLL(path).kernel
    fn.restype = None
    return fn


def _args(inputs: Any, outputs: Any, sizes: Any) -> list[Any]:
    ptrs = [ctypes.c_void_p(a.ctypes.data) for a in list(inputs) + list(outputs)]
    return ptrs + [ctypes.c_int(int(s)) for s in sizes]


def _verify_runs(
    fn: Any, buffers: Any, input_sets: Any, specs: Any, sizes: Any
) -> tuple[list[Any], list[Any]]:
    """Each set copied into the *same* input buffers (pointer-keyed caches return stale data),
    outputs freshly allocated and NaN-filled, snapshotted right after the call returns."""
    outputs, digests = [], []
    for values in input_sets:
        for buf, val in zip(buffers, values, strict=True):
            np.copyto(buf, val)
        outs = [_fresh(s) for s in specs]
        fn(*_args(buffers, outs, sizes))
        outputs.append([o.copy() for o in outs])
        digests.append([_digest(b) for b in buffers])
    return outputs, digests


def _time(fns: Any, buffers: Any, specs: Any, sizes: Any, req: Any) -> list[list[int]]:
    outs = [_fresh(s) for s in specs]
    args = _args(buffers, outs, sizes)
    for _ in range(req["warmup"]):
        for fn in fns:
            fn(*args)
    times: list[list[int]] = [[] for _ in fns]
    start = time.perf_counter()
    trials = 0
    while True:
        for k, fn in enumerate(fns):  # interleaved A B A B: drift hits both alike
            t0 = time.perf_counter_ns()
            fn(*args)
            times[k].append(time.perf_counter_ns() - t0)
        trials += 1
        if trials < req["min_trials"]:
            continue
        if trials >= req["max_trials"] or time.perf_counter() - start > req["budget_s"]:
            break
        a = np.asarray(times[0], dtype=float)
        q1, med, q3 = np.percentile(a, [25, 50, 75])
        if (q3 - q1) / med <= req["target_rel_iqr"]:
            break
    return times


def main(request_path: str, result_path: str) -> None:
    with open(request_path, "rb") as f:
        req = pickle.load(f)
    result: dict[str, Any] = {}
    try:
        headroom = int(req["memory_bytes"])
        resource.setrlimit(resource.RLIMIT_AS, (_vm_size() + headroom, _vm_size() + headroom))
        fns = [_bind(p) for p in req["artifacts"]]
        sets = req["input_sets"]
        buffers = [np.array(a, copy=True) for a in sets[0]]
        specs, sizes = req["output_specs"], req["sizes"]
        if req["mode"] == "time":
            result["times"] = _time(fns, buffers, specs, sizes, req)
        result["outputs"], result["input_digests"] = _verify_runs(fns[0], buffers, sets, specs, sizes)
    except Exception as exc:  # reported, not raised: the parent maps it to an Outcome
        result = {"error": f"{type(exc).__name__}: {exc}"}
    tmp = result_path + ".tmp"
    with open(tmp, "wb") as f:
        pickle.dump(result, f, protocol=5)

    os.replace(tmp, result_path)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
