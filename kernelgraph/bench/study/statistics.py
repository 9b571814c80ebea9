"""The study's statistics: fractions of the oracle per split, arm and budget, paired per-instance
ratios with bootstrap CIs and Wilcoxon tests (kernelgraph/bench/stats.py, the one statistics module),
the landscapes' agreement, and the declared success criteria judged on a report."""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from kernelgraph.agent.targets import Target
from kernelgraph.agent.tasks.base import Task
from kernelgraph.bench.landscapes import space
from kernelgraph.bench.stats import bootstrap_mean_interval, geomean, geomean_of_all, paired, spearman
from kernelgraph.bench.study.landscapes import Landscape, beside
from kernelgraph.bench.study.protocol import CONTROLS, PRIMARY_K, REACH, StudyPlan, label_of


def attempts_to_reach(fractions: Sequence[float], level: float = REACH) -> int | None:
    for n, value in enumerate(fractions, start=1):
        if value >= level:
            return n
    return None


def at_budget(row: Mapping[str, Any], k: int, factor: int) -> tuple[float, float]:
    n = min(k * factor, len(row["curve"])) - 1
    return row["curve"][n], row["speedups"][n]


def vs_library_at_budget(row: Mapping[str, Any], k: int, factor: int) -> float | None:
    """The speedup over the library of the config reached after `k` attempts (None: no library figure)."""
    values = row.get("speedups_vs_library") or [None]
    return values[min(k * factor, len(values)) - 1]


def summarize(rows: Sequence[Mapping[str, Any]], plan: StudyPlan) -> dict[str, Any]:
    """Per split, arm and K: mean fraction of the oracle, geomean speedup, attempts to 90%; paired
    per-instance ratios of counters (and hybrid) against every control."""
    factor = {a.name: a.budget_factor for a in plan.arms}
    out: dict[str, Any] = {}
    for split in sorted({r["split"] for r in rows}):
        in_split = [r for r in rows if r["split"] == split]
        per: dict[str, Any] = {}
        # instance key -> arm -> K -> list of fractions over seeds and replicates
        fractions: dict[str, dict[str, dict[int, list[float]]]] = defaultdict(
            lambda: defaultdict(lambda: defaultdict(list))
        )
        speedups: dict[str, dict[int, list[float]]] = defaultdict(lambda: defaultdict(list))
        vs_library: dict[str, dict[int, list[float | None]]] = defaultdict(lambda: defaultdict(list))
        reach: dict[str, list[int | None]] = defaultdict(list)
        curves: dict[str, list[list[float]]] = defaultdict(list)
        for r in in_split:
            key = label_of(r["task"], r["instance"])
            for k in plan.budgets:
                f, s = at_budget(r, k, factor[r["arm"]])
                fractions[key][r["arm"]][k].append(f)
                speedups[r["arm"]][k].append(s)
                vs_library[r["arm"]][k].append(vs_library_at_budget(r, k, factor[r["arm"]]))
            reach[r["arm"]].append(attempts_to_reach(r["curve"]))
            curves[r["arm"]].append(r["curve"])
        instance_means = {
            arm.name: {k: {inst: float(np.mean(fractions[inst][arm.name][k])) for inst in fractions} for k in plan.budgets}
            for arm in plan.arms
        }  # fmt: skip
        for arm in plan.arms:
            got = [x for x in reach[arm.name]]
            per[arm.name] = {
                "fraction_of_oracle": {str(k): float(np.mean(list(instance_means[arm.name][k].values()))) for k in plan.budgets},
                "geomean_speedup": {str(k): geomean(speedups[arm.name][k]) for k in plan.budgets},
                # over the library call; None unless every run has a library figure
                "geomean_speedup_vs_library": {str(k): geomean_of_all(vs_library[arm.name][k]) for k in plan.budgets},
                "attempts_to_90pct_median": _median_reach(got),
                "runs_reaching_90pct": sum(x is not None for x in got) / max(1, len(got)),
                "curve": _curve_band(curves[arm.name], instance_keys=[label_of(r["task"], r["instance"]) for r in in_split if r["arm"] == arm.name]),
            }  # fmt: skip
        comparisons: dict[str, Any] = {}
        for lead in ("counters", "hybrid"):
            if lead not in instance_means:
                continue
            for control in CONTROLS:
                if control not in instance_means:
                    continue
                for k in plan.budgets:
                    comparisons[f"{lead}@{k} vs {control}@{k}"] = paired(
                        instance_means[lead][k], instance_means[control][k]
                    )
        if "memoryless@4K" in instance_means:
            k = PRIMARY_K if PRIMARY_K in plan.budgets else plan.budgets[-1]  # --quick runs K=4 only
            for lead in ("counters", "hybrid"):
                if lead in instance_means:
                    comparisons[f"{lead}@{k} vs memoryless@{4 * k}"] = paired(
                        instance_means[lead][k], instance_means["memoryless@4K"][k]
                    )
        out[split] = {"arms": per, "comparisons": comparisons, "instance_means": {
            a: {str(k): v for k, v in ks.items()} for a, ks in instance_means.items()}}  # fmt: skip
    return out


def _median_reach(values: Sequence[int | None]) -> float | None:
    reached = sorted(v for v in values if v is not None)
    return float(np.median(reached)) if reached else None


def _curve_band(curves: Sequence[Sequence[float]], instance_keys: Sequence[str]) -> dict[str, list[float]]:
    """Mean fraction of the oracle after each attempt, and a 95% bootstrap band over instances."""
    if not curves:
        return {"mean": [], "low": [], "high": []}
    length = min(len(c) for c in curves)
    by_instance: dict[str, list[Sequence[float]]] = defaultdict(list)
    for key, c in zip(instance_keys, curves, strict=True):
        by_instance[key].append(c[:length])
    matrix = np.asarray([np.mean(np.asarray(v), axis=0) for v in by_instance.values()])
    low, high = bootstrap_mean_interval(matrix, resamples=2000, seed=11)
    return {"mean": matrix.mean(axis=0).tolist(), "low": low.tolist(), "high": high.tolist()}


def landscape_summary(
    lands: Mapping[str, Mapping[str, Landscape]], tasks: Mapping[str, Task], plan: StudyPlan, target: Target
) -> dict[str, Any]:
    """Per task: each instance's best config in each landscape (beside the naive baseline, the library
    call and the roofline of `target`), how far the best of one instance is from the oracle of
    another, and the agreement of the two landscapes (noise shown, not assumed)."""
    out: dict[str, Any] = {}
    labels = sorted(lands)
    for name in (*plan.eval_tasks, *plan.dev_tasks):
        task = tasks[name]
        instances = plan.chosen(task)
        entry: dict[str, Any] = {"family": task.family, "configs": len(space(task)), "instances": {}}
        for label in labels:
            land = lands[label][name]
            entry[f"host_{label}"] = land.header.get("host")
            entry[f"started_{label}"] = land.header.get("started_at")
            loads = [p.load_average[0] for p in land.points]
            entry[f"load_{label}"] = [min(loads), float(np.median(loads)), max(loads)] if loads else None
        for inst in instances:
            per: dict[str, Any] = {}
            for label in labels:
                land = lands[label][name]
                best_key, best_ns = land.oracle(inst)
                per[label] = {"best": best_key, "best_ns": best_ns, "baseline_ns": land.baseline_ns(inst),
                              "oracle_speedup": land.baseline_ns(inst) / best_ns,
                              "yardsticks": beside(land, inst, best_key, target).to_json()}  # fmt: skip
            # The best config of each other instance, at this instance (landscape A), as a fraction of the oracle.
            a = lands[labels[0]][name]
            per["others_best_here"] = {
                other: a.oracle(inst)[1] / (a.time(a.oracle(other)[0], inst) or math.inf)
                for other in instances if other != inst
            }  # fmt: skip
            # Agreement of the two landscapes at this instance: Spearman of config times, and the fraction
            # of B's oracle reached by A's best.
            if len(labels) == 2:
                la, lb = (lands[x][name] for x in labels)
                keys = [k for (k, i) in la.times if i == inst and (k, inst) in lb.times]
                xa = np.asarray([la.times[(k, inst)] for k in keys])
                xb = np.asarray([lb.times[(k, inst)] for k in keys])
                per["landscape_rank_correlation"] = spearman(xa, xb)
                per["a_best_on_b"] = lb.oracle(inst)[1] / (lb.time(la.oracle(inst)[0], inst) or math.inf)
                per["median_abs_log_ratio_ab"] = float(np.median(np.abs(np.log(xa / xb)))) if keys else None
            entry["instances"][inst] = per
        entry["best_differs"] = any(
            v < REACH for per in entry["instances"].values() for v in per["others_best_here"].values()
        )
        out[name] = entry
    return out


def verdicts(report: Mapping[str, Any], split: str = "instance") -> dict[str, dict[str, Any]]:
    """The protocol's success criteria (docs/results.md) on `split`: met or not, with the numbers."""
    comparisons = report["summary"][split]["comparisons"]
    k = PRIMARY_K
    out: dict[str, dict[str, Any]] = {}
    for control in ("text", "label", "tpe"):
        c = comparisons[f"counters@{k} vs {control}@{k}"]
        out[f"counters@{k} beats {control}@{k}"] = {"met": c["ci"][0] > 1.0, "ratio": c["ratio"], "ci": c["ci"],
                                                   "p": c["p_one_sided"]}  # fmt: skip
    c = comparisons[f"counters@{k} vs memoryless@{4 * k}"]
    out[f"counters@{k} reaches memoryless@{4 * k}"] = {"met": c["ratio"] >= 1.0, "ratio": c["ratio"], "ci": c["ci"],
                                                       "p": c["p_one_sided"]}  # fmt: skip
    return out
