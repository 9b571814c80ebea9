"""Sandbox child: loads one compiled kernel with ctypes and runs it; see agent/backends/sandbox.py.

Run as a script (`python _child.py REQUEST RESULT_DIR`) inside the sandbox
(agent/backends/bubblewrap.py): it imports nothing from the project, so a kernel's crash, exit() or
hang takes down only this process. The result is written atomically as JSON + npz
(`write_result`); a missing result means the process died before reporting. The parent imports
`variant_factors`/`write_variant` (to rebuild the inputs of the timed calls it verifies) and
`decode_result` from here: one definition for both sides.
"""

import ctypes
import hashlib
import io
import json
import os
import pickle
import resource
import sys
import time
from typing import Any

import numpy as np

# The result goes back as JSON plus an .npz of its arrays, never as a pickle: the parent must not
# unpickle what a process running model-written code could have written (that runs code).
RESULT_JSON, RESULT_ARRAYS = "result.json", "result.npz"


def _encode(value: Any, arrays: list[Any]) -> Any:
    if isinstance(value, np.ndarray):
        arrays.append(np.ascontiguousarray(value))
        return {"__array__": len(arrays) - 1}
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, dict):
        return {"__items__": [[_encode(k, arrays), _encode(v, arrays)] for k, v in value.items()]}
    if isinstance(value, list | tuple):
        return [_encode(v, arrays) for v in value]
    return value


def encode_result(value: Any) -> tuple[bytes, bytes]:
    """(JSON, npz) bytes of a result made of dicts, lists, numbers, strings and numpy arrays."""
    arrays: list[Any] = []
    text = json.dumps(_encode(value, arrays)).encode()
    buf = io.BytesIO()
    np.savez(buf, *arrays)
    return text, buf.getvalue()


def _decode(value: Any, arrays: Any) -> Any:
    if isinstance(value, list):
        return [_decode(v, arrays) for v in value]
    if isinstance(value, dict):
        if "__array__" in value:
            return arrays[f"arr_{int(value['__array__'])}"]
        return {_decode(k, arrays): _decode(v, arrays) for k, v in value.get("__items__", [])}
    return value


def decode_result(text: bytes, npz: bytes) -> Any:
    """The inverse of `encode_result`; refuses pickled (object) arrays."""
    with np.load(io.BytesIO(npz), allow_pickle=False) as arrays:
        return _decode(json.loads(text), {k: arrays[k] for k in arrays.files})


def write_result(directory: str, value: Any) -> None:
    """Write the result atomically (the JSON last: its presence means the result is complete)."""
    text, npz = encode_result(value)
    for name, data in ((RESULT_ARRAYS, npz), (RESULT_JSON, text)):
        tmp = os.path.join(directory, name + ".tmp")
        with open(tmp, "wb") as f:
            f.write(data)
        os.replace(tmp, os.path.join(directory, name))


def _vm_size() -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmSize:"):
                return int(line.split()[1]) * 1024
    return 0


def fill_sentinel(out: Any) -> None:
    """Fill an output before a call with what no right answer is, so a call that skips it is seen."""
    if out.dtype.kind == "f":
        out.fill(np.nan)
    else:
        out.fill(np.iinfo(out.dtype).min)  # a sentinel no real count or index takes


# Where the arrays a kernel is called on sit, in both protocols: one buffer, each array aligned to
# ARRAY_ALIGN bytes and STAGGER_BYTES past the end of the one before. With power-of-two sizes at
# aligned (or page-offset-equal: numpy's large allocations all start 16 bytes into a page) addresses,
# an input and an output element of one index sit a multiple of 4 KiB apart, so they compete for the
# same cache sets and alias in the load/store unit: stencil2d's baseline ran 36.6 ms a call in aligned
# shared buffers against 25.2 once staggered by this (not a power of two), and the in-process
# protocol, in numpy's own allocations, read it 1.25x slower than the staggered isolated one.
ARRAY_ALIGN = 64
STAGGER_BYTES = 4096 + 5 * 64
# The layout starts on a huge page in both protocols (the isolated protocol's files do: tmpfs, huge
# pages), so each array's offset within one, which on huge pages decides the cache sets its lines fall
# in, is the layout's and not wherever an allocation happened to start (the in-process arena started
# on any 4 KiB page before evaluator 18; histogram, the cell that moved most between evaluations, did
# not move with it: its stack did, agent/backends/kernel_call.h).
HUGE_PAGE = 2 << 20


def staggered_offsets(nbytes: list[int]) -> tuple[list[int], int]:
    """Each array's offset in one huge-page-aligned buffer, and the buffer's size."""
    offsets, offset = [], 0
    for n in nbytes:
        offsets.append(offset)
        offset += -(-n // ARRAY_ALIGN) * ARRAY_ALIGN + STAGGER_BYTES
    return offsets, max(offset, ARRAY_ALIGN)


def _staggered_arrays(specs: list[tuple[Any, Any]]) -> list[Any]:
    """Empty arrays of (shape, dtype) `specs`, carved from one allocation at `staggered_offsets`
    from a huge page boundary: the layout the isolated protocol's shared buffers have."""
    nbytes = [int(np.prod(shape, dtype=np.int64)) * np.dtype(dtype).itemsize for shape, dtype in specs]
    offsets, size = staggered_offsets(nbytes)
    arena = np.empty(size + HUGE_PAGE, dtype=np.uint8)
    start = -arena.ctypes.data % HUGE_PAGE
    return [
        arena[start + o : start + o + n].view(np.dtype(dtype)).reshape(shape)
        for o, n, (shape, dtype) in zip(offsets, nbytes, specs, strict=True)
    ]


def cache_flusher(library: str | None) -> Any:
    """A function that writes back and evicts every cache line of an array from every cache (the
    `flush_lines` of agent/backends/timed_call.c, built by agent/backends/native.py): called on each
    timed call's inputs and outputs just before the call, in both protocols and for the libraries
    the kernels are quoted beside, so every call starts from one declared state, its data in memory
    and in no cache, whatever the harness did before it (docs/sandbox.md#cold-state). No library: a
    function that leaves the caches as they are (`TimingPlan.cold` off)."""
    if library is None:
        return lambda array: None
    flush_lines = ctypes.CDLL(library).flush_lines
    flush_lines.argtypes, flush_lines.restype = (ctypes.c_void_p, ctypes.c_size_t), None

    def flush(array: Any) -> None:
        flush_lines(array.ctypes.data, array.nbytes)

    return flush


def _digest(array: Any) -> str:
    return hashlib.sha256(np.ascontiguousarray(array).tobytes()).hexdigest()


def kernel_caller(library: str) -> tuple[Any, Any]:
    """(bind, arguments): `bind(path)` is the kernel of the object at `path` as a function of one
    `arguments(inputs, outputs, sizes)`, called through `call_kernel` of the evaluator's library
    (agent/backends/timed_call.c), with its stack where the isolated protocol's child has it
    (agent/backends/kernel_call.h); every argument passed as a long, as that child passes them."""
    lib = ctypes.CDLL(library)
    call_kernel = lib.call_kernel
    call_kernel.argtypes, call_kernel.restype = (ctypes.c_void_p, ctypes.c_void_p), None
    longs = ctypes.c_long * ctypes.c_int.in_dll(lib, "kg_max_args").value

    def bind(path: str) -> Any:
        kernel = ctypes.cast(ctypes.CDLL(path).kernel, ctypes.c_void_p).value
        return lambda args: call_kernel(kernel, args)

    def arguments(inputs: Any, outputs: Any, sizes: Any) -> Any:
        return longs(*(a.ctypes.data for a in (*inputs, *outputs)), *(int(s) for s in sizes))

    return bind, arguments


def _verify_runs(
    fn: Any, arguments: Any, buffers: Any, outputs_per_set: Any, input_sets: Any, sizes: Any
) -> tuple[list[Any], list[Any]]:
    """Each set copied into the *same* input buffers (pointer-keyed caches return stale data), its
    own outputs NaN-filled, snapshotted right after the call returns."""
    outputs, digests = [], []
    for values, outs in zip(input_sets, outputs_per_set, strict=True):
        for buf, val in zip(buffers, values, strict=True):
            np.copyto(buf, val)
        for out in outs:
            fill_sentinel(out)
        fn(arguments(buffers, outs, sizes))
        outputs.append([o.copy() for o in outs])
        digests.append([_digest(b) for b in buffers])
    return outputs, digests


# Timed calls never see the same input twice: call k reads the base set with every float element
# scaled by a factor in (1 - VARIANT_EPS, 1] taken from a fixed random array at offset k. Shrinking
# toward zero keeps values inside the ranges tasks draw from ([0, 1) stays [0, 1)); a stale output
# of another call is off by ~VARIANT_EPS, far beyond any tolerance. Integer inputs (indices, CSR
# structure) cannot vary without breaking the task and repeat: docs/sandbox.md says so.
VARIANT_EPS = 2.0**-7


def variant_factors(size: int, calls: int, seed: int) -> Any:
    """The per-element factors: call k uses `factors[k : k + size]` (a view, no copy)."""
    rng = np.random.default_rng(seed)
    return (1.0 - VARIANT_EPS * rng.random(size + calls)).astype(np.float32)


def write_variant(base: Any, factors: Any, call: int, out: Any) -> None:
    """Input `base` as timed call `call` sees it, written into `out` (same shape and dtype)."""
    if base.dtype.kind != "f":
        np.copyto(out, base)
        return
    flat = factors[call : call + base.size].reshape(base.shape)
    np.multiply(base, flat, out=out, casting="unsafe")


def enough_trials(times: Any, elapsed_s: float, plan: Any) -> bool:
    """The one stopping rule of timing (agent/backends/timing.py; the Triton worker uses it too):
    at least `min_trials`, then stop at `max_trials`, past `budget_s`, or once the candidate's
    relative IQR is within `target_rel_iqr`. `plan` is `TimingPlan.request()`."""
    if len(times) < plan["min_trials"]:
        return False
    if len(times) >= plan["max_trials"] or elapsed_s > plan["budget_s"]:
        return True
    q1, med, q3 = np.percentile(np.asarray(times, dtype=float), [25, 50, 75])
    return bool((q3 - q1) / med <= plan["target_rel_iqr"])


def _threads() -> int:
    """Threads of this process now (/proc/self/status), 0 where unreadable."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("Threads:"):
                    return int(line.split()[1])
    except (OSError, ValueError):
        return 0
    return 0


def _time(
    fns: Any, arguments: Any, buffers: Any, outs: Any, base: Any, sizes: Any, req: Any
) -> dict[str, Any]:
    """Interleaved timing (A B A B ...); every call on its own input variant, outputs fresh per call.

    The outputs (and the inputs' digests after the call) of the calls in `req["sampled_calls"]` are
    kept for the parent to verify against the reference of that call's variant.
    Around every timed call of each kernel the process CPU time (all threads) is read as well, outside
    the wall-clock pair, so `cpu_ns[k] / sum(times[k])` is kernel k's parallelism while timed; and the
    candidate's first call, made before any other, shows how many threads it started (an OpenMP pool
    stays alive after its region).
    """
    warmup, max_trials = int(req["warmup"]), int(req["max_trials"])
    factors = variant_factors(max(b.size for b in base), warmup + max_trials, int(req["variant_seed"]))
    flush = cache_flusher(req["flush_library"])

    def start_cold(k: int) -> None:
        """The declared cold state before a call of kernel `k`: the inputs and its outputs flushed."""
        for array in (*buffers, *outs[k]):
            flush(array)

    sampled = set(int(c) for c in req["sampled_calls"])
    kept: dict[int, Any] = {}
    for kernel_outs in outs:
        for o in kernel_outs:
            fill_sentinel(o)
    threads_before = _threads()
    threads_used = 0
    for call in range(warmup):
        for b, buf in zip(base, buffers, strict=True):
            write_variant(b, factors, call, buf)
        for k, fn in enumerate(fns):
            start_cold(k)
            fn(arguments(buffers, outs[k], sizes))
            if call == 0 and k == 0:
                threads_used = max(1, _threads() - threads_before + 1) if threads_before else 0
    times: list[list[int]] = [[] for _ in fns]
    cpu_ns = [0 for _ in fns]
    start = time.perf_counter()
    trials = 0
    while True:
        call = warmup + trials
        for b, buf in zip(base, buffers, strict=True):
            write_variant(b, factors, call, buf)
        for k, fn in enumerate(fns):  # interleaved A B A B: drift hits both alike
            for o in outs[k]:
                fill_sentinel(o)
            start_cold(k)
            args = arguments(buffers, outs[k], sizes)
            c0 = time.process_time_ns()
            t0 = time.perf_counter_ns()
            fn(args)
            times[k].append(time.perf_counter_ns() - t0)
            cpu_ns[k] += time.process_time_ns() - c0
        if call in sampled:  # the candidate's own timed outputs, snapshotted right after its call
            kept[call] = {"outputs": [o.copy() for o in outs[0]], "digests": [_digest(b) for b in buffers]}
        trials += 1
        if enough_trials(times[0], time.perf_counter() - start, req):
            break
    return {"times": times, "timed_calls": kept, "cpu_ns": cpu_ns, "threads_used": threads_used}


def install_seccomp(program: bytes) -> None:
    """Load the parent's seccomp allow-list (agent/backends/seccomp.py KERNEL_FILTER) on this process
    and every thread it starts, before the kernel's object is even loaded."""

    class SockFprog(ctypes.Structure):
        _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]

    libc = ctypes.CDLL(None, use_errno=True)
    buf = ctypes.create_string_buffer(program, len(program))
    prog = SockFprog(len(program) // 8, ctypes.cast(buf, ctypes.c_void_p))
    pr_set_no_new_privs, pr_set_seccomp, seccomp_mode_filter = 38, 22, 2
    if (
        libc.prctl(pr_set_no_new_privs, 1, 0, 0, 0) != 0
        or libc.prctl(pr_set_seccomp, seccomp_mode_filter, ctypes.byref(prog), 0, 0) != 0
    ):
        raise OSError(ctypes.get_errno(), "cannot install the seccomp filter")


def main(request_path: str, result_dir: str) -> None:
    with open(request_path, "rb") as f:
        req = pickle.load(f)
    result: dict[str, Any] = {}
    try:
        headroom = int(req["memory_bytes"])
        resource.setrlimit(resource.RLIMIT_AS, (_vm_size() + headroom, _vm_size() + headroom))
        if req.get("seccomp"):
            install_seccomp(req["seccomp"])
        bind, arguments = kernel_caller(req["timed_call_library"])
        fns = [bind(p) for p in req["artifacts"]]
        sets = req["input_sets"]
        specs, sizes = req["output_specs"], req["sizes"]
        # The inputs and every kernel's outputs laid out as the isolated protocol lays out its own,
        # then each verification call's outputs: carved from the same layout, so the gap after an
        # output is there in every call (a kernel that keeps state in it ran over the heap when they
        # were allocated alone), at addresses no other call had, as before.
        timed = len(fns) if req["mode"] == "time" else 0
        arrays = _staggered_arrays(
            [(a.shape, a.dtype) for a in sets[0]] + [tuple(s) for s in specs] * (timed + len(sets))
        )
        buffers = arrays[: len(sets[0])]
        for buf, values in zip(buffers, sets[0], strict=True):
            np.copyto(buf, values)
        outputs = arrays[len(sets[0]) :]
        kernel_outputs = [outputs[k * len(specs) : (k + 1) * len(specs)] for k in range(timed + len(sets))]
        if req["mode"] == "time":
            result.update(_time(fns, arguments, buffers, kernel_outputs[:timed], sets[0], sizes, req))
        result["outputs"], result["input_digests"] = _verify_runs(
            fns[0], arguments, buffers, kernel_outputs[timed:], sets, sizes
        )
    except Exception as exc:  # reported, not raised: the parent maps it to an Outcome
        result = {"error": f"{type(exc).__name__}: {exc}"}
    write_result(result_dir, result)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
