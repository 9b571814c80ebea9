"""`kernelgraph bench yardsticks`: every task's kernels beside the library a user would call and the
roofline, and fast_p over all tasks.

For each task: the library call (agent/library.py: torch CPU eager at the target's thread count where
torch is installed, numpy otherwise; checked by the task's check), the naive baseline kernel, and the
best kernel a short greedy search finds (each step tries every one-transform neighbour of the current
best, in the task's transform order, kept by the loop's own evaluation), all on the same inputs and by
the same timing protocol. The report leads with the speedup over the library; fast_p (KernelBench's
share of tasks correct and faster than the library by more than p) is given at p = 0, 1 and 2. The
machine's load average is recorded beside every task's figures.
"""

from __future__ import annotations

import itertools
import os
import platform
from collections.abc import Sequence
from typing import Any

from rich.console import Console
from rich.table import Table

from kernelgraph.agent.backends.c import CBackend
from kernelgraph.agent.backends.timing import FAST_TIMING, TimingPlan
from kernelgraph.agent.library import fast_p, time_library, yardsticks
from kernelgraph.agent.loop import evaluate
from kernelgraph.agent.results import Outcome
from kernelgraph.agent.targets import Target, get_target
from kernelgraph.agent.tasks import get_task
from kernelgraph.agent.tasks.base import Config, Task
from kernelgraph.bench.reports import code_version

FAST_P = (0.0, 1.0, 2.0)


def neighbours(task: Task, config: Config) -> list[Config]:
    """Every config one transform (with any of its parameter choices) away from `config`."""
    found: list[Config] = []
    for spec in task.transforms:
        names = list(spec.params)
        for values in itertools.product(*(spec.params[n] for n in names)):
            new = spec.apply(config, dict(zip(names, values, strict=True)))
            if new is not None and new not in found:
                found.append(new)
    return found


def greedy_best(
    task: Task, backend: CBackend, target: Target, budget: int, naive_ns: float
) -> tuple[Config, float, int]:
    """(config, median ns, evaluations) of the best kernel `budget` evaluations find from the naive
    baseline (timed at `naive_ns`)."""
    config = dict(task.baseline_config)
    source = task.source("c", config)
    best_ns, spent = naive_ns, 0
    tried: list[Config] = [config]
    improved = True
    while improved and spent < budget:
        improved = False
        for candidate in neighbours(task, config):
            if spent >= budget:
                break
            if candidate in tried:
                continue
            tried.append(candidate)
            spent += 1
            verdict = evaluate(
                task, backend, target, task.source("c", candidate), source, parent_median_ns=best_ns
            )
            if verdict.outcome == Outcome.KEPT and verdict.profile is not None:
                config, source, best_ns, improved = (
                    dict(candidate),
                    task.source("c", candidate),
                    verdict.profile.median_ns,
                    True,
                )
                break
    return config, best_ns, spent


def run_yardsticks(
    task_names: Sequence[str], target_name: str, budget: int, plan: TimingPlan = FAST_TIMING,
    console: Console | None = None,
) -> dict[str, Any]:  # fmt: skip
    target = get_target(target_name)
    backend = CBackend(timing=plan)
    threads = target.cores or 1
    rows: list[dict[str, Any]] = []
    for name in task_names:
        task = get_task(name)
        if console is not None:
            console.print(f"[bold]{name}[/]: library, naive baseline, greedy search ({budget} evaluations)")
        library = time_library(task, None, threads, target, plan=plan)
        naive_source = task.source("c", task.baseline_config)
        naive = backend.profile(task, naive_source, target)
        if naive.outcome != Outcome.KEPT:
            raise RuntimeError(f"{name}: the naive baseline did not time: {naive.reason}")
        config, best_ns, spent = greedy_best(task, backend, target, budget, naive.median_ns)
        best = yardsticks(task, best_ns, target, naive_median_ns=naive.median_ns, library=library)
        rows.append({
            "task": name,
            "load_average": os.getloadavg(),
            "library": library.to_json(),
            "naive": yardsticks(task, naive.median_ns, target, library=library).to_json(),
            "best": best.to_json(),
            "best_config": config,
            "evaluations": spent,
        })  # fmt: skip
        if console is not None:
            console.print(f"  best: {best.line()}", highlight=False)
    best_speedups = [r["best"]["speedup_vs_library"] for r in rows]
    naive_speedups = [r["naive"]["speedup_vs_library"] for r in rows]
    return {
        "target": target.name,
        "host": platform.node(),
        "threads": threads,
        "peaks": {
            "gflops": target.peak_gflops,
            "gbps_levels": dict(target.bandwidth_gbps),
            "cache_bytes": dict(target.cache_bytes),
        },
        "budget": budget,
        "timing": plan.request(),
        "code": code_version(),
        "fast_p": {f"fast_{p:g}": fast_p(best_speedups, p) for p in FAST_P},
        "fast_p_naive": {f"fast_{p:g}": fast_p(naive_speedups, p) for p in FAST_P},
        "tasks": rows,
    }


def render(report: dict[str, Any]) -> Table:
    """The library comparison first: one row per task."""
    table = Table(title=f"kernels beside the library on {report['target']} ({report['threads']} threads)")
    for column in ("task", "library", "library ms", "best ms", "vs library", "vs naive", "roofline",
                   "GFLOP/s", "GB/s", "load"):  # fmt: skip
        table.add_column(column, justify="left" if column in ("task", "library") else "right")
    for r in report["tasks"]:
        lib, best = r["library"], r["best"]
        vs_lib = (
            f"[bold]{best['speedup_vs_library']:.2f}x[/]" if best["speedup_vs_library"] else lib["outcome"]
        )
        table.add_row(
            r["task"],
            f"{lib['library']}: {lib['call']}"[:48],
            f"{lib['median_ns'] / 1e6:.3f}" if lib["median_ns"] else "-",
            f"{best['median_ns'] / 1e6:.3f}",
            vs_lib,
            f"{best['speedup_vs_naive']:.2f}x" if best["speedup_vs_naive"] else "-",
            f"{100 * best['roofline_fraction']:.1f}%" if best["roofline_fraction"] is not None else "-",
            f"{best['achieved_gflops']:.1f}",
            f"{best['achieved_gbps']:.1f}",
            f"{r['load_average'][0]:.1f}",
        )
    fp = report["fast_p"]
    table.caption = (
        f"fast_p over {len(report['tasks'])} tasks (best kernel of a {report['budget']}-evaluation greedy search): "
        + ", ".join(f"{k} = {v:.2f}" for k, v in fp.items())
        + "; naive baseline: "
        + ", ".join(f"{k} = {v:.2f}" for k, v in report["fast_p_naive"].items())
    )
    return table
