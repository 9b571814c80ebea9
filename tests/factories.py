"""Builders of valid graph records for tests; each test changes only what it is about."""

from __future__ import annotations

import importlib.util
import sys
import time
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any

from kernelgraph.core.signature import SIGNATURE_DIM, source_dimensions, source_index, source_property

if TYPE_CHECKING:
    from kernelgraph.service.store import GraphStore

SOURCE = "cpu_cachegrind"  # the counter source of the factories' measurements


def masked(values: list[float] | float = 0.5, source: str = SOURCE) -> list[float | None]:
    """A full-length list of values (or one value everywhere) as `source` measures it: null at the
    dimensions that source does not measure (signature version 2)."""
    full = [values] * SIGNATURE_DIM if isinstance(values, float) else list(values)
    if len(full) != SIGNATURE_DIM:
        return list(full)  # malformed on purpose: left for the validation under test
    measured = set(source_dimensions(source))
    return [v if i in measured else None for i, v in enumerate(full)]


def target(name: str = "cpu-test", **overrides: Any) -> dict[str, Any]:
    return {"name": name, "kind": "cpu", "arch": "x86-64-v3", "peak_gflops": 200.0, "peak_gbps": 20.0,
            "cores": 2, "isa": "x86-64-v3", **overrides}  # fmt: skip


def kernel(task: str = "matmul", source: str = "void kernel(void) {}", **overrides: Any) -> dict[str, Any]:
    return {"task": task, "backend": "c", "source": source, "patterns": ["dense-matmul"], **overrides}


def measurement(
    median_ns: float = 1e6, signature: list[float] | None = None, **overrides: Any
) -> dict[str, Any]:
    """A measurement whose signature is given (`signature`: a full-length list, nulled where the source
    does not measure); by default 0.5 on every dimension the source measures."""
    return {
        "median_ns": median_ns, "iqr_ns": median_ns * 0.01, "trials": 21, "correct": True,
        "counter_source": SOURCE, "counters": {"time_ns": median_ns, "flops": 2e6, "bytes": 1e6},
        "signature": masked(signature if signature is not None else 0.5), **overrides,
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
        "child_measurement": measurement(1e6 / speedup, parent_median_ns=1e6) if speedup else None,
        "outcome": outcome,
        "speedup": speedup,
        **overrides,
    }


def in_source_index(store: GraphStore, namespace: str, expected: set[str]) -> set[str]:
    """The namespace's measurements that SOURCE's vector index returns, once it holds `expected` (it takes
    changes in shortly after a commit; after 30 s, whatever it returns). The index is shared by the whole
    test session, whose states mostly sit at the query's 0.5, so the query asks for as many neighbours as
    the index holds: a fixed number was once filled by other tests' states."""
    deadline = time.monotonic() + 30
    while True:
        records = store.driver.execute_query(
            "MATCH (m:Measurement) WHERE m[$prop] IS NOT NULL WITH count(m) + 1 AS everything "
            "CALL db.index.vector.queryNodes($index, everything, $vector) YIELD node "
            "WHERE node.namespace = $ns RETURN node.measurement_id AS id",
            prop=source_property(SOURCE), index=source_index(SOURCE), vector=[0.5] * len(source_dimensions(SOURCE)),
            ns=namespace, database_=store.database,
        ).records  # fmt: skip
        found = {r["id"] for r in records}
        if found == expected or time.monotonic() > deadline:
            return found
        time.sleep(0.5)


def script(name: str) -> ModuleType:
    """scripts/<name>.py, imported as a module (the dev tools are scripts, not a package)."""
    return _fresh_module(Path(__file__).resolve().parents[1] / "scripts" / f"{name}.py", f"scripts.{name}")


def bench_module(name: str) -> ModuleType:
    """A fresh copy of kernelgraph.bench.<name> (a diagnostic): a test may change its globals without
    reaching the next test or the module everyone else imports."""
    import kernelgraph.bench

    path = Path(kernelgraph.bench.__file__).parent / f"{name}.py"
    return _fresh_module(path, f"tests.fresh.kernelgraph_bench_{name}")


def _fresh_module(path: Path, name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    # Registered before it runs: a script that defines a dataclass needs its module in sys.modules.
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module
