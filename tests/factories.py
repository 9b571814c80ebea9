"""Builders of valid graph records for tests; each test changes only what it is about."""

from __future__ import annotations

from typing import Any

from kernelgraph.client.signature import SIGNATURE_DIM


def target(name: str = "cpu-test", **overrides: Any) -> dict[str, Any]:
    return {"name": name, "kind": "cpu", "arch": "x86-64-v3", "peak_gflops": 200.0, "peak_gbps": 20.0,
            "cores": 2, "isa": "x86-64-v3", **overrides}  # fmt: skip


def kernel(task: str = "matmul", source: str = "void kernel(void) {}", **overrides: Any) -> dict[str, Any]:
    return {"task": task, "backend": "c", "source": source, "patterns": ["dense-matmul"], **overrides}


def measurement(
    median_ns: float = 1e6, signature: list[float] | None = None, **overrides: Any
) -> dict[str, Any]:
    return {
        "median_ns": median_ns, "iqr_ns": median_ns * 0.01, "trials": 21, "correct": True,
        "counter_source": "cpu_timing", "counters": {"time_ns": median_ns, "flops": 2e6, "bytes": 1e6},
        "signature": signature if signature is not None else [0.5] * SIGNATURE_DIM, **overrides,
    }  # fmt: skip


def attempt(key: str = "run-1:0", transform: str = "unroll", speedup: float | None = 1.5,
            outcome: str = "kept", target_name: str = "cpu-test", parent_source: str = "void kernel(void) {}",
            child_source: str = "void kernel(void) { /* unrolled */ }", task: str = "matmul",
            parent_signature: list[float] | None = None, **overrides: Any) -> dict[str, Any]:  # fmt: skip
    return {
        "attempt_key": key,
        "run_id": key.split(":")[0],
        "agent": "test-agent",
        "target": target_name,
        "parent": kernel(task, parent_source),
        "parent_measurement": measurement(1e6, parent_signature),
        "transform": {"name": transform, "params": {"factor": 4}},
        "child": kernel(task, child_source),
        "child_measurement": measurement(1e6 / speedup) if speedup else None,
        "outcome": outcome,
        "speedup": speedup,
        **overrides,
    }
