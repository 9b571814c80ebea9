"""kernelgraph.bench.stats, the experiments' one statistics module: a geomean over runs is whole or
none, percentiles are measured values, and a bootstrap interval is reproducible from its seed."""

from __future__ import annotations

import math

import numpy as np
import pytest

from kernelgraph.bench.stats import (
    bootstrap_mean_interval,
    geomean,
    geomean_of_all,
    nearest_rank,
    percentiles,
)


def test_a_geomean_over_runs_is_of_every_run_or_none() -> None:
    assert geomean_of_all([2.0, 8.0]) == pytest.approx(4.0)
    assert geomean_of_all([2.0, None]) is None  # one run unmeasured: no figure rather than a flattering one
    assert geomean_of_all([2.0, 0.0]) is None and geomean_of_all([]) is None
    assert geomean([2.0, 8.0]) == pytest.approx(4.0) and math.isnan(geomean([]))


def test_percentiles_are_nearest_rank_values() -> None:
    values = [5.0, 1.0, 3.0, 2.0, 4.0]
    assert nearest_rank(values, 0.5) == 3.0 and nearest_rank(values, 0.95) == 5.0
    assert percentiles([1.0, 2.0, 3.0, 4.0]) == {"p50": 2.0, "p95": 4.0, "p99": 4.0}
    assert all(math.isnan(v) for v in percentiles([]).values())


def test_the_bootstrap_interval_brackets_the_mean_and_repeats_for_a_seed() -> None:
    data = np.random.default_rng(1).normal(10.0, 2.0, size=40)
    low, high = bootstrap_mean_interval(data, resamples=2000, seed=3)
    assert low < data.mean() < high and high - low < 2.5  # about 4 standard errors wide
    assert (low, high) == bootstrap_mean_interval(data, resamples=2000, seed=3)
    columns = bootstrap_mean_interval(np.stack([data, data + 5.0], axis=1), resamples=2000, seed=3)
    assert columns[0].shape == (2,) and columns[0][1] == pytest.approx(low + 5.0)
