"""`kernelgraph bench sandbox`: what the bubblewrap sandbox costs per evaluation, and whether it adds
timing noise.

The same trusted kernel (the task's baseline) is evaluated with the sandbox and with it off
(`Sandbox(enabled=False)`), the two modes interleaved repeat by repeat, in alternating order
(A B B A ...), so drift and order hit both alike:
- spawn: a confined `/bin/true` against an unconfined one (bwrap + setpriv start-up);
- compile: an uncached gcc + admission build;
- check: a correctness check on three input sets (compile cached);
- profile: interleaved timing against itself, with its median, IQR and rel. IQR (= IQR / median).
Figures are medians over the repeats; the JSON lands in results/sandbox-bench-<time>.json and
results/sandbox-bench-latest.json (docs/operations.md quotes them).
"""

from __future__ import annotations

import os
import platform
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from kernelgraph.agent.backends.bubblewrap import Mount, Rlimits, Sandbox, scratch_dir
from kernelgraph.agent.backends.c import CBackend
from kernelgraph.agent.backends.timing import TimingPlan
from kernelgraph.agent.evaluator import EVALUATOR_VERSION
from kernelgraph.agent.targets import Target, get_target
from kernelgraph.agent.tasks import get_task
from kernelgraph.agent.tasks.base import Task

MODES = {"sandboxed": True, "unsandboxed": False}
BENCH_TIMING = TimingPlan(warmup=2, min_trials=30, max_trials=30, budget_s=10.0, target_rel_iqr=0.0)


def _seconds(fn: Callable[[], object]) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def _spawn(sandbox: Sandbox) -> None:
    with scratch_dir("kg-bench-") as work:
        done = sandbox.run(["/bin/true"], mounts=[Mount(work, writable=True)], env={}, cwd=work,
                           limits=Rlimits(), timeout_s=30)  # fmt: skip
        if done.returncode != 0:
            raise RuntimeError(f"/bin/true failed in the sandbox: {done.stderr[-300:]}")


def _one_repeat(task: Task, target: Target, sandbox: Sandbox, cache: Path, repeat: int) -> dict[str, float]:
    backend = CBackend(cache_dir=cache / f"r{repeat}", counters=False, timing=BENCH_TIMING, sandbox=sandbox)
    source = task.source("c", task.baseline_config)
    figures = {"spawn_s": statistics.median(_seconds(lambda: _spawn(sandbox)) for _ in range(5))}
    figures["compile_s"] = _seconds(lambda: backend.compile(task, source, target))
    figures["check_s"] = _seconds(lambda: backend.check(task, source, target))
    start = time.perf_counter()
    profile = backend.profile(task, source, target, parent_source=source)
    figures["profile_s"] = time.perf_counter() - start
    if profile.outcome.value != "kept":
        raise RuntimeError(f"profiling the baseline failed: {profile.reason}")
    figures["median_ns"] = profile.median_ns
    figures["iqr_ns"] = profile.iqr_ns
    figures["rel_iqr"] = profile.iqr_ns / profile.median_ns
    return figures


def run_bench(task_name: str, target_name: str, repeats: int) -> dict[str, Any]:
    """Both modes, interleaved per repeat; medians per mode and the sandbox's overhead."""
    task, target = get_task(task_name), get_target(target_name)
    runs: dict[str, list[dict[str, float]]] = {mode: [] for mode in MODES}
    with tempfile.TemporaryDirectory(prefix="kg-sandbox-bench-") as tmp:
        for repeat in range(repeats):
            order = list(MODES.items())
            for mode, enabled in order if repeat % 2 == 0 else reversed(order):  # ABBA: no order bias
                sandbox = Sandbox(enabled=enabled)
                runs[mode].append(_one_repeat(task, target, sandbox, Path(tmp) / mode, repeat))
                print(f"repeat {repeat + 1}/{repeats} {mode}: {runs[mode][-1]}", file=sys.stderr)
    load = os.getloadavg()  # the machine's load while the bench ran: noise figures depend on it
    medians = {
        mode: {k: statistics.median(r[k] for r in rows) for k in rows[0]} for mode, rows in runs.items()
    }
    on, off = medians["sandboxed"], medians["unsandboxed"]
    return {
        "bench": "sandbox",
        "taken_at": datetime.now(UTC).isoformat(),
        "host": platform.node(),
        "cpus": os.cpu_count(),
        "load_average_1m_after": load[0],
        "task": task.name,
        "target": target.name,
        "repeats": repeats,
        "timing_plan": {"warmup": BENCH_TIMING.warmup, "trials": BENCH_TIMING.min_trials},
        "evaluator_version": EVALUATOR_VERSION,
        "sandbox": Sandbox().label,
        "medians": medians,
        "overhead_s": {k: on[k] - off[k] for k in ("spawn_s", "compile_s", "check_s", "profile_s")},
        "rel_iqr": {"sandboxed": on["rel_iqr"], "unsandboxed": off["rel_iqr"]},
        "median_time_ratio": on["median_ns"] / off["median_ns"],
        "runs": runs,
    }


def render(result: dict[str, Any]) -> str:
    """A short human summary of one bench result."""
    on, off, over = result["medians"]["sandboxed"], result["medians"]["unsandboxed"], result["overhead_s"]
    lines = [
        f"sandbox bench: {result['task']} on {result['target']}, {result['repeats']} repeats ({result['sandbox']})"
    ]
    for key in ("spawn_s", "compile_s", "check_s", "profile_s"):
        lines.append(f"  {key:<10} sandboxed {on[key] * 1e3:8.1f} ms  off {off[key] * 1e3:8.1f} ms  "
                     f"overhead {over[key] * 1e3:+8.1f} ms")  # fmt: skip
    lines.append(f"  rel. IQR   sandboxed {on['rel_iqr']:.4f}  off {off['rel_iqr']:.4f}")
    lines.append(f"  median kernel time sandboxed / off: {result['median_time_ratio']:.3f}")
    lines.append(
        f"  load average (1 min) when done: {result['load_average_1m_after']:.2f} on {result['cpus']} CPUs"
    )
    return "\n".join(lines)
