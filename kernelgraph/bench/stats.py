"""The experiments' statistics, in one place: geomeans, bootstrap intervals, the paired test, latency
percentiles; and, re-exported, the rank statistics and bootstrap the service itself scores transfer
with (kernelgraph.service.stats: the service may not import the experiments).

Every experiment imports its statistics from here. Everything is deterministic for a given seed, so a
reported interval can be reproduced.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from kernelgraph.service.stats import (
    BOOTSTRAP_RESAMPLES,
    bootstrap_indices,
    percentile_interval,
    spearman,
    spearman_rows,
)

__all__ = [
    "BOOTSTRAP_RESAMPLES",
    "bootstrap_indices",
    "bootstrap_mean_interval",
    "geomean",
    "geomean_of_all",
    "nearest_rank",
    "paired",
    "percentile_interval",
    "percentiles",
    "spearman",
    "spearman_rows",
]

TIE = 1e-12  # |log ratio| at or below this is a tie in the paired comparison


def geomean(values: Iterable[float]) -> float:
    """The geometric mean of positive `values`; NaN when there are none."""
    data = list(values)
    return math.exp(sum(math.log(v) for v in data) / len(data)) if data else math.nan


def geomean_of_all(values: Sequence[float | None]) -> float | None:
    """The geometric mean of figures over runs, or None when any run lacks one (or it is not positive):
    a geomean over the runs that happened to be measured would mislead."""
    if not values or any(v is None or v <= 0 for v in values):
        return None
    return math.exp(sum(math.log(v) for v in values if v is not None) / len(values))


def bootstrap_mean_interval(data: ArrayLike, resamples: int, seed: int) -> tuple[Any, Any]:
    """95% percentile interval of the mean over the rows of `data`, rows resampled with replacement:
    two floats for 1-D data, two arrays (one value per column) for 2-D data."""
    array = np.asarray(data, dtype=float)
    means = array[bootstrap_indices(array.shape[0], resamples, seed)].mean(axis=1)
    low, high = np.percentile(means, [2.5, 97.5], axis=0)
    return low, high


def paired(arm: Mapping[str, float], control: Mapping[str, float]) -> dict[str, Any]:
    """Per-instance ratio arm/control (of the instances both have): geomean, 95% bootstrap CI over
    instances, wins/losses/ties, and the declared one-sided Wilcoxon signed-rank test (arm > control)."""
    from scipy.stats import wilcoxon  # scipy only where a paired test is asked for

    keys = sorted(set(arm) & set(control))
    logs = [math.log(arm[k] / control[k]) for k in keys]
    low, high = bootstrap_mean_interval(logs, resamples=10_000, seed=7)
    nonzero = [x for x in logs if abs(x) > TIE]
    p = float(wilcoxon(nonzero, alternative="greater").pvalue) if len(nonzero) >= 2 else 1.0
    return {
        "instances": len(keys), "ratio": math.exp(float(np.mean(logs))),
        "ci": [math.exp(float(low)), math.exp(float(high))],
        "wins": sum(x > TIE for x in logs), "losses": sum(x < -TIE for x in logs),
        "ties": sum(abs(x) <= TIE for x in logs), "p_one_sided": p,
        "per_instance": {k: arm[k] / control[k] for k in keys},
    }  # fmt: skip


def nearest_rank(values: Sequence[float], q: float) -> float:
    """The `q` quantile (0..1) of `values` by nearest rank: always one of the values; NaN when empty."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, math.ceil(q * len(ordered)) - 1))] if ordered else math.nan


def percentiles(values_ms: Sequence[float]) -> dict[str, float]:
    """p50/p95/p99 (nearest rank) of latencies in ms."""
    return {name: nearest_rank(values_ms, q) for name, q in (("p50", 0.50), ("p95", 0.95), ("p99", 0.99))}
