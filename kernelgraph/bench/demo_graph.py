"""Seed a small, realistic experience graph (namespace `tour`, apart from the `demo` namespace of `kernelgraph demo`, so its synthetic
GPU attempts never become experience for a real run) for the docs' tour and screenshots.

Two GPU targets (sm90, sm80) and two CPU targets; row-reduction tasks (softmax, rmsnorm, layernorm)
and matmul; chains of transforms where each kept child becomes the next parent, with failures mixed in.
The data is deterministic (a fixed seed) and recorded through KnowledgeService.record_attempts, so a
rerun writes nothing new. Used by scripts/screenshots.py; run alone with
`python -m kernelgraph.bench.demo_graph` against the configured server.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Any

from kernelgraph.core.signature import source_dimensions
from kernelgraph.service.knowledge import KnowledgeService

NAMESPACE = "tour"

TARGETS: list[dict[str, Any]] = [
    {"name": "h100-sm90", "kind": "cuda", "arch": "sm90", "peak_gflops": 60000.0, "peak_gbps": 3350.0,
     "sm_count": 132, "description": "NVIDIA H100 SXM"},
    {"name": "a100-sm80", "kind": "cuda", "arch": "sm80", "peak_gflops": 19500.0, "peak_gbps": 2039.0,
     "sm_count": 108, "description": "NVIDIA A100 SXM"},
    {"name": "cpu-x86-64-v4", "kind": "cpu", "arch": "x86-64-v4", "peak_gflops": 300.0, "peak_gbps": 40.0,
     "cores": 2, "isa": "x86-64-v4"},
    {"name": "cpu-x86-64-v2", "kind": "cpu", "arch": "x86-64-v2", "peak_gflops": 80.0, "peak_gbps": 40.0,
     "cores": 2, "isa": "x86-64-v2"},
]  # fmt: skip

TASKS: dict[str, tuple[str, ...]] = {
    "softmax": ("row-reduction", "row-major-stream", "transcendental", "multi-pass"),
    "rmsnorm": ("row-reduction", "row-major-stream", "broadcast-vector"),
    "layernorm": ("row-reduction", "row-major-stream", "broadcast-vector", "multi-pass"),
    "matmul": ("dense-2d", "reuse-blocked", "row-major-stream", "column-stride"),
}

# transform (shared vocabulary, agent/transforms.py) -> (params, mean log-speedup on memory-bound rows,
# on matmul); GPU and CPU menus.
GPU_TRANSFORMS: dict[str, tuple[dict[str, Any], float, float]] = {
    "fuse": ({"passes": 2}, 0.45, -0.05),
    "vectorize": ({"width": 4}, 0.25, 0.10),
    "schedule": ({"block": 1}, 0.30, -0.20),
    "parallelize": ({"num_warps": 8}, 0.10, 0.15),
    "tile": ({"bm": 128, "bn": 128, "bk": 32}, -0.30, 0.70),
    "unroll": ({"stages": 3}, -0.05, 0.35),
    "change_layout": ({"dtype": "bf16"}, -0.40, 0.90),
}
CPU_TRANSFORMS: dict[str, tuple[dict[str, Any], float, float]] = {
    "fuse": ({"passes": 2}, 0.40, -0.05),
    "vectorize": ({"width": 16}, 0.35, 0.30),
    "unroll": ({"factor": 4}, 0.08, 0.12),
    "interchange": ({"order": "ikj"}, -0.05, 0.60),
    "block_for_cache": ({"tile": 64}, -0.10, 0.55),
    "parallelize": ({"threads": 2}, 0.30, 0.45),
}
FAILURE_KINDS = ("compile_error", "incorrect", "crashed", "timeout")


@dataclass(frozen=True)
class DemoGraph:
    namespace: str
    lineage_kernel_id: str  # the last kept softmax kernel on sm90: a long lineage
    attempts: int


def _signature(rng: random.Random, memory_bound: bool, progress: float) -> list[float]:
    """A plausible counter signature (version 2, every dimension; `_measurement` nulls the ones its
    counter source does not measure): memory-bound rows sit near the bandwidth roof as they improve."""
    mem = min(0.95, 0.35 + 0.5 * progress) if memory_bound else 0.2 + 0.1 * progress
    comp = 0.08 + 0.05 * progress if memory_bound else min(0.9, 0.25 + 0.55 * progress)
    values = [comp, mem, 0.2 if memory_bound else 0.7,
              0.3 - 0.1 * progress, 0.6 if memory_bound else 0.2, 0.5 + 0.3 * progress,
              0.3 + 0.4 * progress, 0.0, 0.3, 0.1, max(comp, mem)]  # fmt: skip
    return [min(1.0, max(0.0, v + rng.uniform(-0.03, 0.03))) for v in values]


def _source(task: str, backend: str, steps: list[str]) -> str:
    applied = ", ".join(steps) or "none"
    if backend == "triton":
        return f"@triton.jit\ndef {task}_kernel(X, Y, N: tl.constexpr):\n    # transforms: {applied}\n    ..."
    return f"void {task}(const float *x, float *y, int n) {{\n  /* transforms: {applied} */\n}}"


def _measurement(rng: random.Random, median_ns: float, signature: list[float], gpu: bool) -> dict[str, Any]:
    source = "nvidia_ncu" if gpu else "cpu_cachegrind"
    measured = set(source_dimensions(source))
    return {
        "median_ns": round(median_ns, 1), "iqr_ns": round(median_ns * 0.015, 1), "trials": 31, "correct": True,
        "counter_source": source, "counters": {"time_ns": round(median_ns, 1)},
        "signature": [v if i in measured else None for i, v in enumerate(signature)],
    }  # fmt: skip


def build_attempts(rng: random.Random) -> tuple[list[dict[str, Any]], dict[str, str]]:
    """Attempts of a few agent runs: per target and task, a chain of steps from a naive kernel."""
    attempts: list[dict[str, Any]] = []
    last_kept: dict[str, str] = {}
    for target in TARGETS:
        gpu = target["kind"] == "cuda"
        menu = GPU_TRANSFORMS if gpu else CPU_TRANSFORMS
        backend = "triton" if gpu else "c"
        # sm80 is slower than sm90 and a bit more sensitive to the same transforms (transfer is imperfect).
        scale = {"h100-sm90": 1.0, "a100-sm80": 1.6, "cpu-x86-64-v4": 40.0, "cpu-x86-64-v2": 65.0}[
            target["name"]
        ]
        for task, patterns in TASKS.items():
            memory_bound = task != "matmul"
            run_id = f"tour-{target['name']}-{task}"
            steps: list[str] = []
            parent = {"task": task, "backend": backend, "source": _source(task, backend, steps),
                      "patterns": list(patterns), "variant": "naive"}  # fmt: skip
            median = scale * (180_000.0 if memory_bound else 900_000.0)
            progress = 0.0
            for step in range(9):
                name = rng.choice(sorted(menu))
                params, gain_rows, gain_mm = menu[name]
                mean_gain = gain_rows if memory_bound else gain_mm
                if target["name"] == "a100-sm80":
                    mean_gain *= 0.8
                child_steps = [*steps, name]
                child = {"task": task, "backend": backend, "source": _source(task, backend, child_steps),
                         "patterns": list(patterns), "variant": "+".join(child_steps)}  # fmt: skip
                attempt: dict[str, Any] = {
                    "attempt_key": f"{run_id}:{step}", "run_id": run_id, "agent": "tour-agent",
                    "target": target["name"], "parent": parent,
                    "parent_measurement": _measurement(rng, median, _signature(rng, memory_bound, progress), gpu),
                    "transform": {"name": name, "params": params}, "child": child,
                    "rationale": f"{name} on a {'memory' if memory_bound else 'compute'}-bound {task}",
                }  # fmt: skip
                failure = rng.random() < (
                    0.25 if name in ("change_layout", "unroll", "block_for_cache") else 0.1
                )
                if failure:
                    kind = rng.choice(FAILURE_KINDS)
                    attempt.update(outcome=kind, speedup=None, child_measurement=None,
                                   diagnosis=f"{kind.replace('_', ' ')} after {name}")  # fmt: skip
                    attempts.append(attempt)
                    continue
                speedup = max(0.3, min(6.0, 2.718 ** rng.gauss(mean_gain, 0.12)))
                child_median = median / speedup
                child_progress = min(1.0, progress + max(0.0, mean_gain) * 0.5)
                attempt["child_measurement"] = {
                    **_measurement(rng, child_median, _signature(rng, memory_bound, child_progress), gpu),
                    "parent_median_ns": median,
                }
                attempt["speedup"] = round(speedup, 4)
                attempt["outcome"] = "kept" if speedup > 1.02 else "discarded"
                attempts.append(attempt)
                if attempt["outcome"] == "kept":
                    parent, median, progress, steps = child, child_median, child_progress, child_steps
            last_kept[f"{target['name']}/{task}"] = run_id
    return attempts, last_kept


def seed(knowledge: KnowledgeService, namespace: str = NAMESPACE) -> DemoGraph:
    """Record the demo graph (idempotent) and say which kernel has the interesting lineage."""
    knowledge.upsert_targets(namespace, TARGETS)
    attempts, _ = build_attempts(random.Random(20250101))
    results = []
    for start in range(0, len(attempts), 50):
        results.extend(knowledge.record_attempts(namespace, attempts[start : start + 50]))
    by_key = {r.attempt_key: r for r in results}
    chain = [a for a in attempts if a["run_id"] == "tour-h100-sm90-softmax" and a["outcome"] == "kept"]
    lineage_kernel = by_key[chain[-1]["attempt_key"]].child_kernel_id if chain else results[0].child_kernel_id
    return DemoGraph(namespace, lineage_kernel, len(attempts))


def main() -> None:
    from kernelgraph.core.settings import get_settings
    from kernelgraph.service import migrate
    from kernelgraph.service.store import GraphStore, open_driver

    settings = get_settings()
    driver = open_driver(settings)
    try:
        store = GraphStore(driver, settings.neo4j_database)
        migrate.apply(store)
        demo = seed(KnowledgeService(store))
        print(
            f"namespace {demo.namespace}: {demo.attempts} attempts; lineage kernel {demo.lineage_kernel_id}"
        )
    finally:
        driver.close()


if __name__ == "__main__":
    main()
