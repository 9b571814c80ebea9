"""`kernelgraph bench quality`: how close the agent's best kernels get to the library and the roofline.

For every C task, the agent (the default `experience` proposer, a fixed budget, experience from the
*other* tasks in the graph: `exclude_task` is the task itself, and tasks run one after another, so
later tasks see what earlier ones recorded) optimizes on `cpu-native` at the task's default size.
Its best kernel is then timed by the sandboxed evaluator at that size and at the task's showcase
instance (matmul n=1024; the memory-bound tasks' default sizes already leave the L2), and the library
is timed on the very same inputs in the same run: `library_time`, the one place that knows how.
Each row gives both times, the kernel's GFLOP/s or GB/s, and its fraction of the roofline (the
target's measured FMA peak and triad bandwidth). Goals (issue #30) are evaluated, not asserted:
matmul n=1024 at >= 50% of the library's GFLOP/s, memory-bound rows at >= 70% of the bandwidth
roofline, and the kernel faster than the library (`fast_1`) on at least half of the tasks.
"""

from __future__ import annotations

import math
import os
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
from rich.console import Console

from kernelgraph.agent.backends.base import Backend
from kernelgraph.agent.backends.c import TIMING_SEED, CBackend
from kernelgraph.agent.library import LibraryTiming, time_library
from kernelgraph.agent.results import Outcome
from kernelgraph.agent.targets import Target, host_caches, host_identity
from kernelgraph.agent.tasks import all_tasks
from kernelgraph.agent.tasks.base import Arrays, Task

QUALITY_VERSION = 1
FULL_BUDGET = 32
QUICK_BUDGET = 2
QUICK_TASKS = ("matmul", "reduction")  # one compute-bound, one memory-bound: the report's two shapes
SHOWCASE_INSTANCE = {"matmul": "1024"}  # timed besides the default size
DOCS_BEGIN, DOCS_END = "<!-- bench-quality:begin -->", "<!-- bench-quality:end -->"
GOAL_MATMUL_FRACTION, AIM_MATMUL_FRACTION = 0.5, 0.8
GOAL_MEMORY_FRACTION = 0.7
GOAL_FAST_1 = 0.5


def host_cache_bytes(level: int) -> int | None:
    """The size of one core's data or unified cache at `level` (3: the last level), as
    agent/targets.py reads it from /sys; None if unknown."""
    found = host_caches().get({1: "L1", 2: "L2"}.get(level, "LLC"))
    return found[0] if found else None


def load_average() -> list[float]:
    return [round(v, 2) for v in os.getloadavg()]


def library_time(task: Task, target: Target) -> LibraryTiming:
    """The task's declared library call (agent/library.py: torch CPU eager, numpy otherwise) timed in
    its own sandboxed process by the kernels' protocol at the target's thread count, and checked by
    the task's own check: the one library harness of the product."""
    return time_library(task, None, target.cores or 1, target)


def roofline_ns(task: Task, inputs: Arrays, target: Target) -> tuple[float, str]:
    """The least time the target's measured peaks allow, and which roof binds ("compute"/"memory")."""
    compute = task.flops(inputs) / target.peak_gflops if target.peak_gflops else 0.0
    memory = task.bytes_moved(inputs) / target.peak_gbps if target.peak_gbps else 0.0
    return (compute, "compute") if compute >= memory else (memory, "memory")


def measure_row(task: Task, instance: str, source: str, target: Target, backend: Backend) -> dict[str, Any]:
    """One (task, size) row: the kernel by the sandboxed evaluator, then the library, same inputs."""
    timed = task.at(instance) if instance else task
    inputs = timed.make_inputs(TIMING_SEED, False)
    shape = "x".join(str(d) for d in next(iter(inputs.values())).shape)
    row: dict[str, Any] = {"task": task.name, "instance": instance or "default", "shape": shape}
    flops, moved = timed.flops(inputs), timed.bytes_moved(inputs)
    profile = backend.profile(timed, source, target)
    timing = library_time(timed, target)
    kernel_ns = profile.median_ns if profile.outcome == Outcome.KEPT else math.nan
    library = (timing.median_ns, timing.label) if timing.median_ns is not None else None
    roof_ns, bound = roofline_ns(timed, inputs, target)
    l2 = host_cache_bytes(2)
    row.update(
        bound=bound,
        working_set_bytes=moved,
        leaves_l2=None if l2 is None else moved > l2,
        kernel_ns=kernel_ns if math.isfinite(kernel_ns) else None,
        kernel_outcome=profile.outcome.value,
        kernel_rel_iqr=profile.iqr_ns / profile.median_ns if math.isfinite(kernel_ns) and kernel_ns else None,
        library=library[1] if library else None,
        library_ns=library[0] if library else None,
        library_outcome=timing.outcome.value,
        roofline_ns=roof_ns,
        load_average=load_average(),
    )
    if math.isfinite(kernel_ns):
        row["kernel_gflops"] = flops / kernel_ns
        row["kernel_gbps"] = moved / kernel_ns
        row["roofline_fraction"] = roof_ns / kernel_ns
        if library:
            row["vs_library"] = library[0] / kernel_ns  # > 1: the kernel is faster
    return row


def goals(rows: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """The issue's goals, evaluated on the rows (met / missed and by how much)."""
    out: dict[str, Any] = {}
    mm = [r for r in rows if r["task"] == "matmul" and r["instance"] == "1024" and "vs_library" in r]
    if mm:
        fraction = mm[0]["vs_library"]
        out["matmul_1024_fraction_of_library"] = {
            "value": fraction, "goal": GOAL_MATMUL_FRACTION, "aim": AIM_MATMUL_FRACTION,
            "met": fraction >= GOAL_MATMUL_FRACTION,
        }  # fmt: skip
    memory = [r for r in rows if r["bound"] == "memory" and r["instance"] == "default"]
    out["memory_bound_fraction_of_roofline"] = {
        r["task"]: {"value": r.get("roofline_fraction"), "goal": GOAL_MEMORY_FRACTION,
                    "met": (r.get("roofline_fraction") or 0.0) >= GOAL_MEMORY_FRACTION}
        for r in memory
    }  # fmt: skip
    per_task = [r for r in rows if r["instance"] == "default" and r.get("library_ns")]
    faster = [r["task"] for r in per_task if (r.get("vs_library") or 0.0) > 1.0]
    share = len(faster) / len(per_task) if per_task else 0.0
    out["fast_1"] = {"value": share, "tasks_faster": faster, "tasks": len(per_task), "goal": GOAL_FAST_1,
                     "met": share >= GOAL_FAST_1}  # fmt: skip
    return out


def run_quality(
    target: Target,
    backend: CBackend,
    client: Any,
    *,
    quick: bool,
    tasks: Sequence[str] | None = None,
    budget: int | None = None,
    console: Console | None = None,
    seed: int = 0,
) -> dict[str, Any]:
    """Optimize each task, then time its best against the library and the roofline (one report)."""
    from kernelgraph.agent.loop import optimize
    from kernelgraph.agent.proposers.experience import ExperienceProposer

    chosen = [
        t
        for t in all_tasks("c")
        if t.name in (tasks or (QUICK_TASKS if quick else [t.name for t in all_tasks("c")]))
    ]
    budget = budget or (QUICK_BUDGET if quick else FULL_BUDGET)
    report: dict[str, Any] = {
        "kind": "bench-quality",
        "quality_version": QUALITY_VERSION,
        "quick": quick,
        "budget": budget,
        "proposer": "experience",
        "experience": "the other tasks in the graph (exclude_task = the task itself), in task order",
        "target": target.name,
        "peak_gflops": target.peak_gflops,
        "peak_gbps": target.peak_gbps,
        "host": host_identity(),
        "cores": target.cores,
        "counters": backend.counters,
        "started_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "load_average_start": load_average(),
        "l2_bytes": host_cache_bytes(2),
        "llc_bytes": host_cache_bytes(3),
        "numpy": np.__version__,
        "rows": [],
        "runs": [],
    }
    for task in chosen:
        if console is not None:
            console.print(f"[bold]{task.name}[/]: optimizing, budget {budget} (load {load_average()})")
        proposer = ExperienceProposer(client, seed=seed, exclude_task=task.name)
        result = optimize(task, backend, target, proposer, client, budget, seed=seed, final_check=False)
        report["runs"].append({
            "task": task.name, "run_id": result.run_id, "attempts": result.attempts,
            "outcomes": result.outcomes, "best_config": dict(result.best_config or {}),
            "speedup_over_baseline": result.speedup,
        })  # fmt: skip
        instances = [
            "",
            *([SHOWCASE_INSTANCE[task.name]] if task.name in SHOWCASE_INSTANCE and not quick else []),
        ]
        for instance in instances:
            row = measure_row(task, instance, result.best_source, target, backend)
            report["rows"].append(row)
            if console is not None:
                console.print(row_line(row), highlight=False)
    report["load_average_end"] = load_average()
    report["finished_at"] = datetime.now(UTC).isoformat(timespec="seconds")
    report["goals"] = goals(report["rows"])
    return report


def _ms(ns: float | None) -> str:
    return "-" if ns is None else f"{ns / 1e6:.3f}"


def _x(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}"


def row_line(row: dict[str, Any]) -> str:
    return (
        f"  {row['task']} {row['shape']}: kernel {_ms(row['kernel_ns'])} ms, library {_ms(row['library_ns'])} ms"
        f" ({_x(row.get('vs_library'))}x), roofline fraction {_x(row.get('roofline_fraction'))}"
    )


def table(report: dict[str, Any]) -> str:
    """The report as a Markdown table (what the docs and the README carry)."""
    lines = [
        f"`kernelgraph bench quality` on {report['target']} ({report['host']}), budget {report['budget']} attempts "
        f"per task, {report['started_at']}; load average {report['load_average_start']} -> "
        f"{report['load_average_end']}; peaks {_x(report['peak_gflops'])} GFLOP/s, {_x(report['peak_gbps'])} GB/s.",
        "",
        "| task | size | bound | kernel ms | library | library ms | kernel / library speed | GFLOP/s | GB/s | roofline fraction |",
        "|---|---|---|---:|---|---:|---:|---:|---:|---:|",
    ]
    for r in report["rows"]:
        lines.append(
            f"| {r['task']} | {r['shape']} | {r['bound']} | {_ms(r['kernel_ns'])} | {r['library'] or '-'} | "
            f"{_ms(r['library_ns'])} | {_x(r.get('vs_library'))} | {_x(r.get('kernel_gflops'))} | "
            f"{_x(r.get('kernel_gbps'))} | {_x(r.get('roofline_fraction'))} |"
        )
    g = report["goals"]
    lines.append("")
    if "matmul_1024_fraction_of_library" in g:
        m = g["matmul_1024_fraction_of_library"]
        lines.append(f"- matmul n=1024: {m['value']:.2f}x the library's speed (goal {m['goal']}, aim {m['aim']}): "
                     f"{'met' if m['met'] else 'missed'}.")  # fmt: skip
    missed = {k: v for k, v in g["memory_bound_fraction_of_roofline"].items() if not v["met"]}
    met = [k for k, v in g["memory_bound_fraction_of_roofline"].items() if v["met"]]
    lines.append(
        f"- memory-bound tasks at >= {GOAL_MEMORY_FRACTION} of the bandwidth roofline: {', '.join(met) or 'none'}; "
        f"missed: {', '.join(k + ' (' + _x(v['value']) + ')' for k, v in missed.items()) or 'none'}."
    )
    f1 = g["fast_1"]
    lines.append(f"- fast_1 (kernel faster than the library): {len(f1['tasks_faster'])} of {f1['tasks']} tasks "
                 f"({f1['value']:.2f}; goal {f1['goal']}): {', '.join(f1['tasks_faster']) or 'none'}.")  # fmt: skip
    return "\n".join(lines) + "\n"


def write_table(report: dict[str, Any], path: Path) -> None:
    """Replace the text between the bench-quality markers of `path` with the report's table."""
    text = path.read_text()
    if DOCS_BEGIN not in text or DOCS_END not in text:
        raise ValueError(f"{path} has no {DOCS_BEGIN} ... {DOCS_END} markers")
    head, rest = text.split(DOCS_BEGIN, 1)
    _, tail = rest.split(DOCS_END, 1)
    path.write_text(head + DOCS_BEGIN + "\n" + table(report) + DOCS_END + tail)
