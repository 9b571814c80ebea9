"""The declared cold state every timed call starts from (evaluator 17, docs/sandbox.md#cold-state):
just before each call, in both protocols, every cache line of the call's inputs and outputs is written
back and evicted from every cache (agent/backends/timed_call.c)."""

from __future__ import annotations

import dataclasses
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from kernelgraph.agent.backends import _child, isolated
from kernelgraph.agent.backends._child import _staggered_arrays, cache_flusher
from kernelgraph.agent.backends.c import CBackend
from kernelgraph.agent.backends.native import timed_call_library
from kernelgraph.agent.backends.timing import IN_PROCESS, ISOLATED, TimingPlan
from kernelgraph.agent.evaluator import DEFAULT_SEEDS
from kernelgraph.agent.results import Outcome
from kernelgraph.agent.targets import Target
from kernelgraph.agent.tasks import get_task
from kernelgraph.bench.landscapes import LANDSCAPE_TIMING

QUICK = TimingPlan(warmup=1, min_trials=5, max_trials=8, budget_s=0.3, protocol=ISOLATED)


def _least_ns(read: Any, before: Any, rounds: int = 60) -> int:
    least = 1 << 62
    for _ in range(rounds):
        before()
        started = time.perf_counter_ns()
        read()
        least = min(least, time.perf_counter_ns() - started)
    return least


def test_a_flushed_array_keeps_its_values_and_is_read_from_memory() -> None:
    """The flush writes dirty lines back (a discard would lose the evaluator's writes) and evicts
    them: reading 512 KiB just flushed is slower than reading it again from the caches (2.7x on the
    Intel host for 1 MiB), by the least of many rounds, which noise only lengthens."""
    flush = cache_flusher(str(timed_call_library()))
    values = np.arange(64 * 1024, dtype=np.float64)  # 512 KiB: in the L2 or L3 of any x86 core
    written = values * 3.0
    values *= 3.0  # dirty lines, in this core's caches
    flush(values)
    np.testing.assert_array_equal(values, written)
    warm = _least_ns(values.sum, values.sum)
    cold = _least_ns(values.sum, lambda: flush(values))
    assert cold > 1.3 * warm, (cold, warm)


def test_every_call_of_the_in_process_protocol_starts_with_its_arrays_flushed(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Warm-up and timed calls alike, each kernel of the pair: every input and that kernel's outputs
    flushed since the call before (the in-process child's `_time`, with kernels that look)."""
    flushed: set[int] = set()
    monkeypatch.setattr(_child, "cache_flusher", lambda library: lambda array: flushed.add(array.ctypes.data))
    arrays = _staggered_arrays([((4096,), np.float32)] * 4)
    inputs, outputs = arrays[:2], [[arrays[2]], [arrays[3]]]
    seen: list[tuple[int, bool]] = []

    def kernel(k: int) -> Any:
        def call(args: Any) -> None:
            pointers = set(args[:3])  # two inputs and the kernel's output, then the size
            assert pointers == {a.ctypes.data for a in (*inputs, *outputs[k])}
            seen.append((k, pointers <= flushed))
            flushed.clear()

        return call

    request = {**dataclasses.replace(QUICK, warmup=2).request(), "variant_seed": 7, "sampled_calls": [],
               "flush_library": "unused"}  # fmt: skip
    base = [np.ones(4096, np.float32), np.ones(4096, np.float32)]
    _, arguments = _child.kernel_caller(str(timed_call_library()))
    result = _child._time([kernel(0), kernel(1)], arguments, inputs, outputs, base, [4096], request)
    assert len(result["times"][0]) >= QUICK.min_trials
    assert len(seen) == 2 * (2 + len(result["times"][0]))
    assert all(was_flushed for _, was_flushed in seen), seen


def test_every_call_of_the_isolated_protocol_starts_with_its_buffers_flushed(
    c_cache: Path, cpu_target: Target, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The evaluator flushes, from its own process, the shared inputs and the called kernel's outputs
    whole, after writing them and before every call: the stand-ins', the warm-up's, the timed pairs'.
    Not before the candidate's last calls, one on each input set of `evaluator.verify`: untimed."""
    flushed: list[tuple[int, int]] = []
    real_flush, real_call = isolated.flush_cached, isolated.KernelServer.call
    calls: list[bool] = []

    def flush(mapping: np.ndarray) -> None:
        flushed.append((mapping.ctypes.data, mapping.nbytes))
        real_flush(mapping)

    def call(server: isolated.KernelServer, deadline: float, command: bytes = b"c") -> tuple[int, int]:
        inputs, outputs = server.shared_inputs, server._map  # the files run on to whole huge pages
        whole = {(inputs._map.ctypes.data, inputs.layout.input_bytes), (outputs.ctypes.data, server.size)}
        calls.append(whole <= set(flushed))
        flushed.clear()
        return real_call(server, deadline, command)

    monkeypatch.setattr(isolated, "flush_cached", flush)
    monkeypatch.setattr(isolated.KernelServer, "call", call)
    task = get_task("elementwise_chain")
    timed = CBackend(cache_dir=c_cache, check_timeout_s=20.0, counters=False, timing=QUICK)
    baseline = task.source("c", task.baseline_config)
    result = timed.profile(task, baseline, cpu_target, parent_source=baseline)
    assert result.outcome is not Outcome.CRASHED, result.reason
    assert result.trials >= QUICK.min_trials
    timed, verified = calls[: -len(DEFAULT_SEEDS)], calls[-len(DEFAULT_SEEDS) :]
    assert len(timed) > 2 * result.trials and all(timed), calls
    assert not any(verified), calls  # the count is right: these calls are the untimed ones


def test_only_the_in_process_protocol_may_time_warm_and_only_the_landscapes_do() -> None:
    with pytest.raises(ValueError, match="cold: the isolated protocol times every call from the cold state"):
        TimingPlan(protocol=ISOLATED, cold=False)
    assert not LANDSCAPE_TIMING.cold and LANDSCAPE_TIMING.cold_state_library() is None
    assert TimingPlan(protocol=IN_PROCESS).cold_state_library() == str(timed_call_library())


def test_the_timed_call_library_is_built_once_per_source(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    timed_call_library.cache_clear()
    try:
        built = timed_call_library()
        assert built.is_relative_to(tmp_path) and built.suffix == ".so"
        stamp = built.stat().st_mtime_ns
        timed_call_library.cache_clear()
        assert timed_call_library() == built and built.stat().st_mtime_ns == stamp
    finally:
        timed_call_library.cache_clear()
