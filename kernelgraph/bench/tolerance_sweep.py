"""`kernelgraph bench tolerances`: every landscape config of every C task checked on 100 seeds (and each
task's edge-of-domain set), so that the tolerances are shown to pass honest kernels. The test suite
checks the baseline and a declared subset (SUBSET_PER_TASK configs per task, a fixed draw)."""

from __future__ import annotations

import os
import random
import time
from pathlib import Path
from typing import Any

from kernelgraph.agent.backends.c import CBackend
from kernelgraph.agent.evaluator import EVALUATOR_VERSION
from kernelgraph.agent.targets import get_target
from kernelgraph.agent.tasks import all_tasks
from kernelgraph.agent.tasks.base import Config, Task
from kernelgraph.bench.landscapes import space

SEEDS = tuple(range(100))
SUBSET_PER_TASK = 1
SUBSET_DRAW_SEED = 27


def sweep_configs(task: Task, per_task: int | None = None) -> list[Config]:
    """The baseline, then every other config (per_task None) or a fixed draw of `per_task` of them."""
    configs = space(task)
    rest = configs[1:]
    if per_task is not None:
        rest = random.Random(SUBSET_DRAW_SEED).sample(rest, min(per_task, len(rest)))
    return [configs[0], *rest]


def run_sweep(target_name: str, tasks: list[str], cache_dir: Path, progress: Any) -> dict[str, Any]:
    """Check each config; the report lists every failure with its reason."""
    target = get_target(target_name)
    backend = CBackend(cache_dir=cache_dir, counters=False, check_timeout_s=120.0)
    rows, failures = [], []
    started = time.monotonic()
    for task in all_tasks():
        if tasks and task.name not in tasks:
            continue
        configs = sweep_configs(task)
        t0 = time.monotonic()
        failed = 0
        for config in configs:
            result = backend.check(task, task.source("c", config), target, seeds=SEEDS)
            if not result.correct:
                failed += 1
                failures.append({"task": task.name, "config": dict(config), "reason": result.reason})
            progress(task.name, len(configs))
        rows.append({"task": task.name, "configs": len(configs), "failed": failed,
                     "seconds": round(time.monotonic() - t0, 1)})  # fmt: skip
    return {
        "what": "every landscape config of every C task checked on 100 seeds plus its edge set",
        "evaluator_version": EVALUATOR_VERSION,
        "target": target_name,
        "seeds": len(SEEDS),
        "tasks": rows,
        "configs": sum(r["configs"] for r in rows),
        "failed": len(failures),
        "failures": failures,
        "seconds": round(time.monotonic() - started, 1),
        "load_average": os.getloadavg(),
    }
