"""`kernelgraph bench signature`: does each counter-signature dimension measure something, and does the
signature find useful neighbours? On the development set only (study v2's `DEV_TASKS`), each sampled
state (config x instance) is profiled twice, independently (compile, check, timing, cachegrind: nothing
reused), and each candidate dimension gets its test-retest noise, its spread between states, its
correlations with the others, and the verdict of the drop rule docs/counter-signature.md wrote down
before the first report was read (`apply_rule`). Then, with the kept dimensions: does the nearest state
at another instance point at a source whose best config scores well here more often than chance?
"""

from __future__ import annotations

import json
import math
import os
import random
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from kernelgraph.agent.targets import Target
from kernelgraph.agent.tasks.base import Config, Task
from kernelgraph.bench.landscapes import (
    LANDSCAPE_TIMING,
    config_key,
    current_key,
    landscape_path,
    read_landscape,
)
from kernelgraph.core.signature import (
    CPU_DIMENSIONS_KEPT,
    CPU_TIME_SHARE,
    DIMENSION_NAMES,
    SIGNATURE_DIM,
    THREAD_SHARE,
    CounterSource,
    Signature,
    TargetPeaks,
    dimension_values,
    masked_distance,
    signature_from_values,
    similarity,
)

# The drop rule (docs/counter-signature.md, "The drop rule"): written before any report was read.
NOISE_TO_SPREAD_MAX = 0.5  # kept only if test-retest noise < this x the spread between states
REDUNDANT_ABS_R = 0.95  # of two kept dimensions correlated above this, the later one goes
MIN_STATES = 10  # a dimension judged on fewer states is not judged: dropped
# The candidates, in the rule's order (the order decides which of two redundant dimensions stays).
CANDIDATES: tuple[str, ...] = (
    "compute_fraction", "memory_fraction", "ridge_position", "l1_miss_rate", "llc_miss_rate",
    "parallel_efficiency", THREAD_SHARE, "issue_efficiency", "launch_overhead_share", "speed_of_light",
)  # fmt: skip
ONE_DIMENSION = ("parallel_efficiency", THREAD_SHARE)  # two readings of one dimension: at most one stays
GOOD_FRACTION = 0.9  # "scores well": at least this fraction of the instance's oracle
# The standardisation rule (docs/counter-signature.md, "The standardisation rule"): written before the
# two-task report was run. A kept dimension's scale is its spread, at least SCALE_FLOOR.
SCALE_FLOOR = 0.01
MAX_DISTANCE_SHARE = 0.5  # the stated bound on one dimension's share of within-task distances (reported)


@dataclass(frozen=True)
class Pair:
    """One state measured twice: its candidate values in each measurement."""

    instance: str
    config: str
    first: Mapping[str, float | None]
    second: Mapping[str, float | None]
    seconds: float  # wall time the two measurements took


def target_peaks(target: Target) -> TargetPeaks:
    return TargetPeaks(target.kind, target.peak_gflops, target.peak_gbps, target.cores, target.isa)


def candidate_values(
    source: str, counters: Mapping[str, float], peaks: TargetPeaks
) -> dict[str, float | None]:
    """Each candidate's value; `parallel_efficiency` is the reading the rule judged under that name,
    version 2's CPU-time share (signature 3 reads the thread share there)."""
    values = dimension_values(CounterSource(source), counters, peaks)
    values["parallel_efficiency"] = values.get(CPU_TIME_SHARE)
    return {name: values.get(name) for name in CANDIDATES}


def sample_states(
    task: Task, instances: Sequence[str], per_instance: int, seed: int
) -> list[tuple[str, Config]]:
    """The baseline and a fixed-seed sample of the task's other configs, the same configs at every instance."""
    from kernelgraph.bench.landscapes import space

    configs = space(task)
    rest = random.Random(seed).sample(configs[1:], min(len(configs) - 1, max(0, per_instance - 1)))
    return [(instance, config) for config in [configs[0], *rest] for instance in instances]


def measure_pairs(
    task: Task,
    target: Target,
    states: Sequence[tuple[str, Config]],
    *,
    budget_s: float,
    console: Console,
) -> tuple[list[Pair], list[dict[str, str]]]:
    """Each state profiled twice by fresh profiles (a new backend each, so nothing is cached between
    them); stops starting new states once `budget_s` is spent. Returns the pairs and the states left
    out (one of their profiles was not kept), with why."""
    from kernelgraph.agent.backends.c import CBackend

    peaks = target_peaks(target)
    pairs: list[Pair] = []
    left_out: list[dict[str, str]] = []
    started = time.monotonic()
    columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
    with Progress(*columns, console=console) as progress:
        bar = progress.add_task(f"{task.name}: states x 2", total=len(states))
        for instance, config in states:
            if time.monotonic() - started > budget_s:
                console.print(f"[yellow]budget of {budget_s:.0f} s spent: {len(pairs)} states measured")
                break
            t0 = time.monotonic()
            measured, why = [], ""
            for _ in range(2):
                result = CBackend(counters=True, timing=LANDSCAPE_TIMING).profile(
                    task.at(instance), task.source("c", config), target
                )
                if result.outcome.value != "kept":
                    why = f"{result.outcome.value}: {result.reason}"[:200]
                    break
                measured.append(candidate_values(str(result.counter_source), result.counters, peaks))
            if len(measured) == 2:
                pairs.append(
                    Pair(instance, config_key(config), measured[0], measured[1], time.monotonic() - t0)
                )
            else:
                left_out.append({"instance": instance, "config": config_key(config), "why": why})
                console.print(f"[yellow]{instance} {config_key(config)}: left out ({why})")
            progress.advance(bar)
    return pairs, left_out


def dimension_stats(pairs: Sequence[Pair]) -> dict[str, dict[str, Any]]:
    """Per candidate: states, noise (SD of the difference / sqrt 2), spread (SD of the state means)."""
    out: dict[str, dict[str, Any]] = {}
    for name in CANDIDATES:
        both = [(p.first[name], p.second[name]) for p in pairs]
        rows = [(float(a), float(b)) for a, b in both if a is not None and b is not None]
        if len(rows) < 2:
            out[name] = {"states": len(rows), "noise": None, "spread": None, "ratio": None}
            continue
        first, second = np.array(rows).T
        noise = float(np.std(first - second, ddof=1) / math.sqrt(2))
        spread = float(np.std((first + second) / 2, ddof=1))
        out[name] = {
            "states": len(rows), "noise": noise, "spread": spread,
            "ratio": noise / spread if spread > 0 else None,
            "mean": float(np.mean((first + second) / 2)),
            "min": float(np.min([first, second])), "max": float(np.max([first, second])),
        }  # fmt: skip
    return out


def correlations(pairs: Sequence[Pair], names: Sequence[str]) -> dict[str, dict[str, float | None]]:
    """Pearson r between the state means of each two dimensions (over states that measured both)."""
    means = {n: [_mean(p, n) for p in pairs] for n in names}
    out: dict[str, dict[str, float | None]] = {}
    for a in names:
        out[a] = {}
        for b in names:
            rows = [
                (x, y) for x, y in zip(means[a], means[b], strict=True) if x is not None and y is not None
            ]
            if len(rows) < 3:
                out[a][b] = None
                continue
            xs, ys = np.array(rows).T
            out[a][b] = None if np.std(xs) == 0 or np.std(ys) == 0 else float(np.corrcoef(xs, ys)[0, 1])
    return out


def _mean(pair: Pair, name: str) -> float | None:
    a, b = pair.first[name], pair.second[name]
    return None if a is None or b is None else (float(a) + float(b)) / 2


def apply_rule(
    stats: Mapping[str, Mapping[str, Any]], corr: Mapping[str, Mapping[str, float | None]]
) -> dict[str, str]:
    """The rule as written: dimension -> "kept" or why it is dropped."""
    verdicts: dict[str, str] = {}
    for name in CANDIDATES:
        s = stats[name]
        if s["states"] < MIN_STATES:
            verdicts[name] = f"dropped: measured on {s['states']} states (< {MIN_STATES})"
        elif not s["spread"]:
            verdicts[name] = "dropped: no spread between states"
        elif s["noise"] >= NOISE_TO_SPREAD_MAX * s["spread"]:
            verdicts[name] = (
                f"dropped: noise {s['noise']:.3g} >= {NOISE_TO_SPREAD_MAX} x spread {s['spread']:.3g}"
            )
        else:
            verdicts[name] = "kept"
    kept: list[str] = []
    for name in CANDIDATES:
        if verdicts[name] != "kept":
            continue
        twin = next((k for k in kept if k in ONE_DIMENSION and name in ONE_DIMENSION), None)
        redundant = next((k for k in kept if abs(corr[k].get(name) or 0.0) > REDUNDANT_ABS_R), None)
        if twin:
            verdicts[name] = f"dropped: {twin} reads the same dimension and stays"
        elif redundant:
            verdicts[name] = f"dropped: |r| = {abs(corr[redundant][name] or 0):.3f} with {redundant}"
        else:
            kept.append(name)
    return verdicts


def dimension_scales(stats: Mapping[str, Mapping[str, Any]], kept: Sequence[str]) -> dict[str, float]:
    """The standardisation rule: each kept dimension's scale is its spread between states (the drop
    rule's statistic), never below SCALE_FLOOR."""
    return {name: max(float(stats[name]["spread"] or 0.0), SCALE_FLOOR) for name in kept}


def distance_shares(
    pairs: Sequence[Pair], names: Sequence[str], scales: Mapping[str, float] | None = None
) -> dict[str, float]:
    """Each dimension's share of the summed squared distance between every two states (state means),
    each dimension divided by its scale in `scales` (none: raw)."""
    scale = [1.0 if scales is None else scales[n] for n in names]
    means = [[None if (m := _mean(p, n)) is None else m / s for n, s in zip(names, scale, strict=True)]
             for p in pairs]  # fmt: skip
    totals = np.zeros(len(names))
    for i in range(len(means)):
        for j in range(i + 1, len(means)):
            for k in range(len(names)):
                a, b = means[i][k], means[j][k]
                if a is not None and b is not None:
                    totals[k] += (a - b) ** 2
    whole = float(totals.sum()) or 1.0
    return {n: float(t / whole) for n, t in zip(names, totals, strict=True)}


def _landscape_times(directory: Path, label: str, task: Task) -> dict[tuple[str, str], float]:
    _, points = read_landscape(landscape_path(directory, label, task.name))
    return {(p.instance, current_key(task, p.config)): p.median_ns for p in points if p.median_ns}


def usefulness(
    pairs: Sequence[Pair],
    names: Sequence[str],
    task: Task,
    landscape_dir: Path,
    scales: Mapping[str, float] | None = None,
) -> dict[str, Any]:
    """For each state (its first measurement as the query), the nearest state at another instance by
    `names` (their second measurements, as stored states) is the source: its instance's best config on
    landscape A, scored on landscape B here as a fraction of this instance's oracle on B. Against
    chance: the same averaged over every candidate source. Distances over `names`, each divided by its
    scale in `scales` (none: raw). A task without both landscapes is not scored (`queries` 0)."""
    if not all(landscape_path(landscape_dir, label, task.name).exists() for label in "AB"):
        return {"queries": 0, "why": f"no landscapes A and B of {task.name} under {landscape_dir}"}
    a_times, b_times = _landscape_times(landscape_dir, "A", task), _landscape_times(landscape_dir, "B", task)
    best_a = {i: min((t, c) for (inst, c), t in a_times.items() if inst == i)[1] for i, _ in a_times}
    oracle_b = {i: min(t for (inst, _), t in b_times.items() if inst == i) for i, _ in b_times}

    def score(source_instance: str, here: str) -> float | None:
        t = b_times.get((here, best_a.get(source_instance, "")))
        return None if t is None or here not in oracle_b else oracle_b[here] / t

    picked, chance, hits, chance_hits = [], [], [], []
    for query in pairs:
        others = [p for p in pairs if p.instance != query.instance]
        scored = [(s, p) for p in others if (s := score(p.instance, query.instance)) is not None]
        d2 = [(_distance(query.first, p.second, names, scales), s) for s, p in scored]
        d2 = [(d, s) for d, s in d2 if d is not None]
        if not d2:
            continue
        nearest = min(d2)[1]
        picked.append(nearest)
        hits.append(nearest >= GOOD_FRACTION)
        chance.append(float(np.mean([s for _, s in d2])))
        chance_hits.append(float(np.mean([s >= GOOD_FRACTION for _, s in d2])))
    if not picked:
        return {"queries": 0}
    return {
        "queries": len(picked),
        "nearest_mean_fraction": float(np.mean(picked)),
        "chance_mean_fraction": float(np.mean(chance)),
        "nearest_good_rate": float(np.mean(hits)),
        "chance_good_rate": float(np.mean(chance_hits)),
        "good_fraction": GOOD_FRACTION,
        "instances": sorted({p.instance for p in pairs}),
    }


def _distance(
    q: Mapping[str, float | None],
    s: Mapping[str, float | None],
    names: Sequence[str],
    scales: Mapping[str, float] | None = None,
) -> float | None:
    # Ranks candidate sources only (the nearest wins), over candidate readings that are no signature
    # dimension (the thread share): no similarity, so the similarity's unit does not enter.
    shared = [n for n in names if q[n] is not None and s[n] is not None]
    if not shared:
        return None
    scale = {n: 1.0 if scales is None else scales[n] for n in shared}
    d2 = sum(((float(q[n] or 0) - float(s[n] or 0)) / scale[n]) ** 2 for n in shared)
    return d2 * SIGNATURE_DIM / len(shared)


# How a stored development state relates to the query state, in `similarity_by_relation`.
RELATIONS = ("re-measurement", "same instance", "other instance", "other task")


def similarity_by_relation(report: Mapping[str, Any], unit: float) -> dict[str, dict[str, float]]:
    """The similarity between a saved report's development states at similarity unit `unit`
    (core/signature.py `similarity_unit`), by relation (`RELATIONS`): each state's first measurement is
    the query and every state's second a stored `cpu_cachegrind` state (as `usefulness` pairs them),
    scored as the service scores them (`masked_distance`, `similarity`: the frozen scales, signature 4's
    dimensions). Per relation: the number of (query, state) pairs and the median and quartiles."""
    from kernelgraph.agent.tasks import get_task

    # A pair names its instance, not its task; the tasks' config spaces differ in their parameters.
    task_of = {frozenset(get_task(name).baseline_config): name for name in report["development_tasks"]}
    states = [
        (task_of[frozenset(json.loads(p["config"]))], p["instance"],
         _as_signature(p["first"]), _as_signature(p["second"]))
        for p in report["pairs"]
    ]  # fmt: skip
    found: dict[str, list[float]] = {relation: [] for relation in RELATIONS}
    for i, (task, instance, query, _) in enumerate(states):
        for j, (other_task, other_instance, _, stored) in enumerate(states):
            distance = masked_distance(query, stored)
            if distance is None:
                continue
            if i == j:
                relation = "re-measurement"
            elif other_task != task:
                relation = "other task"
            else:
                relation = "same instance" if other_instance == instance else "other instance"
            found[relation].append(similarity(*distance, unit))
    out: dict[str, dict[str, float]] = {}
    for relation, values in found.items():
        if values:
            q1, median, q3 = np.percentile(values, [25, 50, 75])
            out[relation] = {"pairs": len(values), "median": float(median), "q1": float(q1), "q3": float(q3)}
    return out


def _as_signature(values: Mapping[str, float | None]) -> Signature:
    """A report's candidate values as the `cpu_cachegrind` signature signature 4 stores (the thread
    share read as parallel_efficiency)."""
    reading = {"parallel_efficiency": THREAD_SHARE}
    kept = set(CPU_DIMENSIONS_KEPT)
    return signature_from_values(
        [values[reading.get(name, name)] if name in kept else None for name in DIMENSION_NAMES],
        CounterSource.CPU_CACHEGRIND,
    )


def run_signature_bench(
    target: Target,
    landscape_dir: Path,
    *,
    per_instance: int,
    budget_s: float,
    seed: int,
    console: Console,
    tasks: Sequence[str] | None = None,
) -> dict[str, Any]:
    """The report on `tasks` (default: the study protocol's `DEV_TASKS`), the budget shared between
    them by their instance counts."""
    from kernelgraph.agent.backends.counters import this_host_cache_model
    from kernelgraph.agent.tasks import get_task
    from kernelgraph.bench.study.protocol import DEV_TASKS, EVAL_TASKS

    started = time.monotonic()
    load_before = os.getloadavg()
    rows: dict[str, Any] = {}
    all_pairs: list[Pair] = []
    left_out: list[dict[str, str]] = []
    development = tuple(tasks or DEV_TASKS)
    for name in development:
        if name in EVAL_TASKS:
            raise ValueError(f"{name} is in the study's evaluation set: the report never measures it")
    chosen = [get_task(name) for name in development]
    instance_counts = [len(task.instances) for task in chosen]
    for n, task in enumerate(chosen):
        name = task.name
        instances = [i.name for i in task.instances]
        states = sample_states(task, instances, per_instance, seed)
        remaining = budget_s - (time.monotonic() - started)
        share = remaining * instance_counts[n] / sum(instance_counts[n:])
        pairs, missed = measure_pairs(task, target, states, budget_s=share, console=console)
        all_pairs += pairs
        left_out += [{"task": name, **m} for m in missed]
        rows[name] = {"pairs": pairs, "task": task}
    stats = dimension_stats(all_pairs)
    corr = correlations(all_pairs, CANDIDATES)
    verdicts = apply_rule(stats, corr)
    kept = [n for n in CANDIDATES if verdicts[n] == "kept"]
    scales = dimension_scales(stats, kept)
    useful = {
        name: {
            "kept": usefulness(r["pairs"], kept, r["task"], landscape_dir),
            "kept_scaled": usefulness(r["pairs"], kept, r["task"], landscape_dir, scales),
            "all_candidates": usefulness(r["pairs"], CANDIDATES, r["task"], landscape_dir),
        }
        for name, r in rows.items()
    }
    model = this_host_cache_model()
    return {
        "kind": "signature",
        "measured_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "development_tasks": list(development),
        "target": target.name,
        "cache_model": model.description,
        "rule": {
            "noise_to_spread_max": NOISE_TO_SPREAD_MAX,
            "redundant_abs_r": REDUNDANT_ABS_R,
            "min_states": MIN_STATES,
            "candidates": list(CANDIDATES),
            "scale_floor": SCALE_FLOOR,
            "max_distance_share": MAX_DISTANCE_SHARE,
        },
        "states": len(all_pairs),
        "per_instance": per_instance,
        "seed": seed,
        "dimensions": stats,
        "correlations": corr,
        "verdicts": verdicts,
        "kept": kept,
        "distance_share_all_candidates": distance_shares(all_pairs, CANDIDATES),
        "distance_share_kept": distance_shares(all_pairs, kept),
        "scales": scales,
        "distance_share_kept_scaled": distance_shares(all_pairs, kept, scales),
        "distance_share_by_task": {
            name: {
                "kept": distance_shares(r["pairs"], kept),
                "kept_scaled": distance_shares(r["pairs"], kept, scales),
            }
            for name, r in rows.items()
        },
        "usefulness": useful,
        "pairs": [p.__dict__ for p in all_pairs],
        "left_out": left_out,
        "seconds": time.monotonic() - started,
        "load_average_before": list(load_before),
        "load_average_after": list(os.getloadavg()),
        "signature_dimensions": list(DIMENSION_NAMES),
    }


def render(report: Mapping[str, Any]) -> Table:
    table = Table(title=f"signature report: {report['states']} states x 2 on {', '.join(report['development_tasks'])}"
                  f" (load {report['load_average_before'][0]:.1f} -> {report['load_average_after'][0]:.1f})")  # fmt: skip
    for column in (
        "dimension",
        "states",
        "noise",
        "spread",
        "noise/spread",
        "range",
        "share of d^2",
        "scale",
        "share, scaled",
        "verdict",
    ):
        table.add_column(column)
    shares = report["distance_share_all_candidates"]
    scaled = report.get("distance_share_kept_scaled", {})
    scales = report.get("scales", {})
    for name in CANDIDATES:
        s = report["dimensions"][name]
        table.add_row(
            name, str(s["states"]), _fmt(s.get("noise")), _fmt(s.get("spread")), _fmt(s.get("ratio")),
            f"{_fmt(s.get('min'))}-{_fmt(s.get('max'))}", f"{shares.get(name, 0):.0%}",
            _fmt(scales.get(name)), f"{scaled[name]:.0%}" if name in scaled else "-", report["verdicts"][name],
        )  # fmt: skip
    return table


def _fmt(value: float | None) -> str:
    return "-" if value is None else f"{value:.3g}"
