"""Tiny planted landscapes for `bench study --version 3 --quick`: every config of a small task timed at
every instance and target (A and B, B 1% noisier), and a counter state of each, made up by rules a test
can reason about, so the whole pipeline runs in minutes without measuring anything. Threads pay at the
largest instance only, more at 2 threads than at 1: the targets share their best transforms but not
their landscapes (rank correlation below 1), so other targets' experience should help a new one."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

from kernelgraph.agent.tasks.base import Config, Task
from kernelgraph.bench.landscapes import config_key, landscape_path, space, states_path
from kernelgraph.bench.study.experience import stable_seed
from kernelgraph.bench.study.measurement import target_dir
from kernelgraph.bench.study.protocol_v3 import LABELS
from kernelgraph.bench.study.targets import StudyTarget
from kernelgraph.bench.study.versions import recorded_versions

PLANTED_GFLOPS_PER_THREAD = 50.0
PLANTED_GBPS = 20.0


def planted_target(target: StudyTarget) -> StudyTarget:
    """`target` with made-up peaks (the quick run never probes the host)."""
    peaks = replace(
        target.target, peak_gflops=PLANTED_GFLOPS_PER_THREAD * target.threads, peak_gbps=PLANTED_GBPS
    )
    return replace(target, target=peaks)


def planted_ns(config: Config, size_rank: int, sizes: int, threads: int, label: str) -> float:
    t = 1000.0 * (1 + size_rank) ** 2
    if config.get("simd"):
        t *= 0.5
    if config.get("parallel"):  # pays at the largest size only, more with 2 threads
        t *= (0.45 if threads > 1 else 0.7) if size_rank == sizes - 1 else 1.6
    t *= {1: 1.0, 4: 0.85, 8: 0.8}.get(int(config.get("unroll", 1)), 1.0)
    for knob in ("fuse", "recip"):
        if config.get(knob):
            t *= 0.9
    if int(config.get("acc", 1)) >= 4:
        t *= 0.9
    if config.get("schedule", "static") != "static":
        t *= 1.05
    if label != LABELS[0]:
        t *= 1.0 + 0.01 * (stable_seed(config_key(config), str(size_rank)) % 100) / 100
    return t


def planted_counters(config: Config, size_rank: int, threads: int, ns: float) -> dict[str, float]:
    n = 4096.0 * 8**size_rank
    vector = 0.25 if config.get("simd") else 1.0
    return {
        "time_ns": ns, "flops": n, "bytes": 4 * n, "instructions": n * vector * (2.0 if int(config.get("unroll", 1)) == 1 else 1.5),
        "d1_miss_rate": 0.02 * (1 + size_rank), "ll_miss_rate": 0.01 * (1 + size_rank), "ll_miss_bytes": 4 * n / (1 + size_rank),
        "threads": float(threads if config.get("parallel") else 1), "cores": float(threads),
    }  # fmt: skip


def plant(directory: Path, tasks: Sequence[Task], targets: Sequence[StudyTarget]) -> None:
    """Write the planted landscapes of `tasks` at `targets` and the counter landscape at the first, every
    point with the running code's versions (the study reads them through its version guard)."""
    versions = recorded_versions()
    for n, target in enumerate(targets):
        folder = target_dir(directory, target.name)
        states = []
        for task in tasks:
            names = [i.name for i in task.instances]
            for label in LABELS:
                path = landscape_path(folder, label, task.name)
                path.parent.mkdir(parents=True, exist_ok=True)
                lines = [json.dumps({"kind": "header", "task": task.name, "label": label, "planted": True,
                                     "instances": [{"name": x} for x in names], "target": target.name})]  # fmt: skip
                for config in space(task):
                    for rank, inst in enumerate(names):
                        ns = planted_ns(config, rank, len(names), target.threads, label)
                        lines.append(json.dumps({"config": config_key(config), "instance": inst, "outcome": "kept",
                                                 "median_ns": ns, "iqr_ns": 0.0, "trials": 7, "measured_at": "",
                                                 "load_average": [0.0, 0.0, 0.0], "steal_share": 0.0, **versions}))  # fmt: skip
                        if label == LABELS[0] and n == 0:
                            states.append({"task": task.name, "instance": inst, "config": config_key(config),
                                           "median_ns": ns, "counters": planted_counters(config, rank, target.threads, ns),
                                           "counter_source": "cpu_cachegrind", "tool_versions": {}, **versions,
                                           "measured_at": "", "load_average": [0.0, 0.0, 0.0]})  # fmt: skip
                path.write_text("\n".join(lines) + "\n")
        if states:
            states_path(folder).write_text("\n".join(json.dumps(s) for s in states) + "\n")
