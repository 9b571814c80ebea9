"""The configs the protocol's checks are run on: each CPU task's baseline and the best config of each
study landscape (results/landscapes/<label>/<task>.jsonl, `kernelgraph bench landscape`)."""

from __future__ import annotations

import json
import math
from collections import defaultdict
from pathlib import Path

from kernelgraph.agent.tasks.base import Config, Task
from kernelgraph.bench.landscapes import landscape_path, read_landscape

LANDSCAPES = Path(__file__).resolve().parents[2] / "results" / "landscapes"


def best_landscape_config(task: Task, directory: Path, label: str) -> Config | None:
    """The config with the lowest geometric-mean time over the instances it was kept at, among those
    kept at every instance of the landscape; None without a landscape."""
    path = landscape_path(directory, label, task.name)
    if not path.exists():
        return None
    _, points = read_landscape(path)
    times: dict[str, list[float]] = defaultdict(list)
    for p in points:
        if p.outcome == "kept" and p.median_ns:
            times[p.config].append(p.median_ns)
    instances = len({p.instance for p in points})
    full = {c: ts for c, ts in times.items() if len(ts) == instances}
    if not full:
        return None
    best = min(full, key=lambda c: sum(math.log(t) for t in full[c]) / len(full[c]))
    # Knobs added since the landscape was measured take their baseline values, as `current_key` reads them.
    return {**task.baseline_config, **json.loads(best)}


def checked_configs(task: Task, directory: Path = LANDSCAPES) -> dict[str, Config]:
    """{"baseline": ..., "best-A": ..., "best-B": ...}: the baseline and each landscape's best that differs."""
    configs: dict[str, Config] = {"baseline": dict(task.baseline_config)}
    if directory.is_dir():
        for label in sorted(p.name for p in directory.iterdir() if p.is_dir()):
            best = best_landscape_config(task, directory, label)
            if best is not None and best not in configs.values():
                configs[f"best-{label}"] = best
    return configs
