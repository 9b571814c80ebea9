"""Sandbox child that times a task's library call (agent/library.py): torch or numpy, never a kernel.

Run as `python -s -m kernelgraph.agent.backends._library_child REQUEST RESULT_DIR` inside the sandbox,
in a process of its own: torch's and numpy's OpenMP runtimes must not share a process with a kernel's
libgomp (two OpenMP runtimes in one process interfere). It times the call by the kernels' protocol
(`_child`: warm-up calls, every call on its own variant of the timed input set, the same stopping
rule) and returns the outputs of every input set for the parent to check against the task's reference.
"""

from __future__ import annotations

import pickle
import sys
import time
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from kernelgraph.agent.backends._child import (
    cache_flusher,
    enough_trials,
    variant_factors,
    write_result,
    write_variant,
)
from kernelgraph.agent.evaluator import digest
from kernelgraph.agent.tasks import definition


def _versions(library: str) -> dict[str, str]:
    versions = {"numpy": np.__version__}
    if library == "torch":
        import torch

        versions["torch"] = torch.__version__
    try:  # which BLAS/OpenMP builds run, at which thread counts: the report says what was compared
        from threadpoolctl import threadpool_info  # type: ignore[import-untyped]

        for pool in threadpool_info():
            api = str(pool.get("internal_api", "?"))
            versions[api] = (
                f"{pool.get('version')} {pool.get('architecture') or ''} threads={pool.get('num_threads')}"
            )
    except ImportError:
        pass
    return versions


def _bind(task: str, library: str, threads: int) -> tuple[Callable[[Any], Mapping[str, Any]], Any, Any]:
    """(call, to_library, to_numpy): the task's declared call and the conversions either side of it."""
    call = definition(task).library
    if call is None:
        raise ValueError(f"task {task!r} declares no library call")
    if library == "torch":
        import torch

        torch.set_num_threads(threads)
        if call.torch is None:
            raise ValueError(f"task {task!r} declares no torch call")
        torch_call = call.torch
        return (
            lambda tensors: torch_call(torch, tensors),
            torch.from_numpy,  # shares the buffer: variants written into it are what torch reads
            lambda value: value.numpy() if hasattr(value, "numpy") else np.asarray(value),
        )
    return call.numpy, lambda array: array, np.asarray


def _outputs(result: Mapping[str, Any], to_numpy: Any, specs: Any) -> list[Any]:
    """The call's outputs as the task's (name, shape, dtype): a 0-d sum reshaped, int64 counts cast."""
    return [
        np.ascontiguousarray(to_numpy(result[name])).astype(dtype).reshape(shape)
        for name, shape, dtype in specs
    ]


def run(req: Mapping[str, Any]) -> dict[str, Any]:
    fn, to_library, to_numpy = _bind(req["task"], req["library"], int(req["threads"]))
    names = req["names"]
    base = req["input_sets"][req["timed"]]
    buffers = [np.array(a, copy=True) for a in base]
    args = {n: to_library(b) for n, b in zip(names, buffers, strict=True)}
    warmup, max_trials = int(req["warmup"]), int(req["max_trials"])
    factors = variant_factors(max(b.size for b in base), warmup + max_trials, int(req["variant_seed"]))
    # The kernels' declared cold state (`cache_flusher`): the inputs evicted before every call. The
    # library's outputs are its own allocations, made inside the call.
    flush = cache_flusher(req["flush_library"])
    for call in range(warmup):
        for b, buf in zip(base, buffers, strict=True):
            write_variant(b, factors, call, buf)
            flush(buf)
        fn(args)
    times: list[int] = []
    start = time.perf_counter()
    while True:
        call = warmup + len(times)
        for b, buf in zip(base, buffers, strict=True):
            write_variant(b, factors, call, buf)
            flush(buf)
        t0 = time.perf_counter_ns()
        fn(args)  # CPU eager: the result is complete when the call returns
        times.append(time.perf_counter_ns() - t0)
        if enough_trials(times, time.perf_counter() - start, req):
            break
    outputs, digests = [], []
    for values, specs in zip(req["input_sets"], req["output_specs"], strict=True):
        arrays = [np.array(a, copy=True) for a in values]
        result = fn({n: to_library(a) for n, a in zip(names, arrays, strict=True)})
        outputs.append(_outputs(result, to_numpy, specs))
        digests.append([digest(a) for a in arrays])
    versions = _versions(req["library"])
    return {
        "times": times,
        "outputs": outputs,
        "input_digests": digests,
        "names": names,
        "versions": versions,
    }


def main(request_path: str, result_dir: str) -> None:
    with open(request_path, "rb") as f:
        req = pickle.load(f)
    try:
        result = run(req)
    except Exception as exc:  # reported, not raised: the parent says why the library has no time
        result = {"error": f"{type(exc).__name__}: {exc}"}
    write_result(result_dir, result)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
