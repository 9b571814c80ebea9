"""Rank statistics and the bootstrap, in one place: Spearman correlation and percentile CIs.

numpy only; everything is deterministic for a given seed, so reported intervals can be reproduced.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
from numpy.typing import NDArray

BOOTSTRAP_RESAMPLES = 1_000
BOOTSTRAP_SEED = 0
CONFIDENCE = 0.95

Array = NDArray[np.float64]


def average_ranks(values: Array) -> Array:
    """Ranks along the last axis (0-based), ties sharing their mean rank; works on 1-D or 2-D input."""
    data = np.atleast_2d(np.asarray(values, dtype=float))
    rows, n = data.shape
    order = np.argsort(data, axis=1, kind="mergesort")
    ordered = np.take_along_axis(data, order, axis=1)
    starts = np.ones_like(ordered, dtype=bool)
    starts[:, 1:] = ordered[:, 1:] != ordered[:, :-1]
    group = np.cumsum(starts, axis=1) - 1 + (np.arange(rows) * n)[:, None]
    positions = np.broadcast_to(np.arange(n, dtype=float), (rows, n))
    mean_position = np.bincount(group.ravel(), weights=positions.ravel(), minlength=rows * n) / np.maximum(
        np.bincount(group.ravel(), minlength=rows * n), 1
    )
    ranks = np.empty_like(ordered)
    np.put_along_axis(ranks, order, mean_position[group], axis=1)
    return ranks if np.ndim(values) > 1 else ranks[0]


def _row_correlations(xs: Array, ys: Array) -> Array:
    """Pearson correlation of each row pair; NaN where a row is constant."""
    dx = xs - xs.mean(axis=1, keepdims=True)
    dy = ys - ys.mean(axis=1, keepdims=True)
    denominator = np.sqrt((dx * dx).sum(axis=1) * (dy * dy).sum(axis=1))
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(denominator > 0, (dx * dy).sum(axis=1) / denominator, np.nan)


def spearman(xs: Sequence[float] | Array, ys: Sequence[float] | Array) -> float | None:
    """Spearman rank correlation; None when it is undefined (fewer than 3 pairs or a constant side)."""
    x, y = np.asarray(xs, dtype=float), np.asarray(ys, dtype=float)
    if x.size < 3:
        return None
    value = float(_row_correlations(average_ranks(x)[None, :], average_ranks(y)[None, :])[0])
    return None if np.isnan(value) else value


def spearman_rows(xs: Array, ys: Array) -> Array:
    """Spearman correlation of each row pair of two 2-D arrays (NaN where undefined)."""
    return _row_correlations(average_ranks(xs), average_ranks(ys))


def bootstrap_indices(
    n: int, resamples: int = BOOTSTRAP_RESAMPLES, seed: int = BOOTSTRAP_SEED
) -> NDArray[np.int64]:
    """`resamples` x `n` indices drawn with replacement: one row per bootstrap resample."""
    return np.random.default_rng(seed).integers(0, n, size=(resamples, n))


def percentile_interval(samples: Array, confidence: float = CONFIDENCE) -> tuple[float | None, float | None]:
    """The percentile interval of bootstrap statistics, ignoring undefined (NaN) resamples."""
    finite = samples[np.isfinite(samples)]
    if finite.size < len(samples) / 2:  # undefined in most resamples: no interval worth reporting
        return None, None
    tail = (1 - confidence) / 2 * 100
    low, high = np.percentile(finite, [tail, 100 - tail])
    return float(low), float(high)


def spearman_ci(
    xs: Sequence[float] | Array,
    ys: Sequence[float] | Array,
    resamples: int = BOOTSTRAP_RESAMPLES,
    seed: int = BOOTSTRAP_SEED,
) -> tuple[float | None, float | None]:
    """Bootstrap (pairs resampled) 95% percentile interval of the Spearman correlation."""
    x, y = np.asarray(xs, dtype=float), np.asarray(ys, dtype=float)
    if x.size < 3:
        return None, None
    index = bootstrap_indices(x.size, resamples, seed)
    return percentile_interval(spearman_rows(x[index], y[index]))


def bootstrap_statistic(
    statistic: Callable[[NDArray[np.int64]], Array],
    n: int,
    resamples: int = BOOTSTRAP_RESAMPLES,
    seed: int = BOOTSTRAP_SEED,
) -> tuple[float | None, float | None]:
    """95% interval of `statistic(index_rows)` -> one value per resample row (a paired bootstrap
    when several statistics are computed from the same `seed`)."""
    if n < 3:
        return None, None
    return percentile_interval(statistic(bootstrap_indices(n, resamples, seed)))
