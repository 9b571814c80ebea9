"""Every counter a backend measures is named by the shared `CounterName` enum (the one contract with the
signature), apart from raw tool events kept under their own prefix."""

from __future__ import annotations

from kernelgraph.agent.backends import counters
from kernelgraph.agent.backends.c import measured_parallelism
from kernelgraph.agent.backends.triton import ARCH_LIMITS
from kernelgraph.agent.backends.triton.ncu import NCU_METRICS
from kernelgraph.agent.backends.triton.occupancy import static_metrics
from kernelgraph.agent.targets import Target
from kernelgraph.agent.tasks import get_task
from kernelgraph.core.signature import CounterName

NAMES = set(CounterName)
CPU = Target(name="cpu-test", kind="cpu", arch="x86-64-v3", peak_gflops=200.0, peak_gbps=20.0, cores=2)


def test_cpu_counters_are_counter_names() -> None:
    task = get_task("matmul")
    inputs = task.make_inputs(0, True)
    assert set(counters.derived_counters(task, inputs, 1e6, 2.0, CPU)) <= NAMES
    raw = {"Ir": 1e6, "Dr": 1e5, "Dw": 1e4, "D1mr": 1e3, "D1mw": 1e2, "DLmr": 10.0, "DLmw": 1.0}
    cachegrind = counters._rates(raw, float(task.flops(inputs)), 2, 64)
    assert {name for name in cachegrind if not name.startswith("cg_")} <= NAMES
    assert set(counters.FALLBACK_CACHE_MODEL.counters()) <= NAMES
    extra = {"times": [[1000, 1100]], "cpu_ns": [4000], "threads_used": 2}
    assert set(measured_parallelism(extra, 2)) <= NAMES


def test_triton_static_and_ncu_counters_are_counter_names() -> None:
    arch = next(iter(ARCH_LIMITS))
    kernel = {"name": "k", "registers": 32, "num_warps": 4, "shared_bytes": 1024, "spill_bytes": 0,
              "num_stages": 2}  # fmt: skip
    assert set(static_metrics([kernel], arch)) <= NAMES
    assert set(NCU_METRICS.values()) <= NAMES
