"""The transfer maths without a database: ranks, Spearman and its bootstrap, the matrix, the prediction."""

from __future__ import annotations

import math

import numpy as np
import pytest

from kernelgraph.service.stats import average_ranks, spearman, spearman_ci
from kernelgraph.service.transfer import (
    TargetFacts,
    architecture_order,
    nearest_by_architecture,
    predict,
    predict_nearest,
    predict_transform_mean,
    source_weights,
    transfer_matrix,
)

T4 = TargetFacts("t4", "sm75", 8_100.0, 320.0)
A100 = TargetFacts("a100", "sm80", 19_500.0, 2_039.0)
L40S = TargetFacts("l40s", "sm89", 91_600.0, 864.0)
L40S_OTHER = TargetFacts("l40s-b", "sm89", 91_600.0, 864.0)
H100 = TargetFacts("h100", "sm90", 66_900.0, 3_350.0)
B200 = TargetFacts("b200", "sm100", 80_000.0, 8_000.0)


def test_ranks_share_ties_in_one_and_many_rows() -> None:
    assert average_ranks(np.array([3.0, 1.0, 3.0, 2.0])).tolist() == [2.5, 0.0, 2.5, 1.0]
    rows = average_ranks(np.array([[1.0, 1.0, 0.0], [0.0, 1.0, 2.0]]))
    assert rows.tolist() == [[1.5, 1.5, 0.0], [0.0, 1.0, 2.0]]
    assert spearman([1, 2, 3], [10, 20, 30]) == pytest.approx(1.0)
    assert spearman([1, 2, 3, 4], [4, 3, 2, 1]) == pytest.approx(-1.0)
    assert spearman([1, 1, 1], [1, 2, 3]) is None and spearman([1, 2], [2, 1]) is None


def test_bootstrap_interval_brackets_the_estimate_and_is_reproducible() -> None:
    rng = np.random.default_rng(3)
    x = rng.normal(size=200)
    y = x + rng.normal(scale=0.8, size=200)
    low, high = spearman_ci(x, y, resamples=400)
    assert low is not None and high is not None
    assert low < (spearman(x, y) or 0) < high and high - low < 0.3
    assert spearman_ci(x, y, resamples=400) == (low, high)
    noise_low, noise_high = spearman_ci(x, rng.normal(size=200), resamples=400)
    assert noise_low is not None and noise_high is not None and noise_low < 0 < noise_high


def test_architecture_order_and_nearest() -> None:
    assert [t.family for t in architecture_order([B200, H100, T4, L40S, A100])] == [
        "Turing", "Ampere", "Ada", "Hopper", "Blackwell"]  # fmt: skip
    assert TargetFacts("x", "unknown").family == "unknown"
    assert nearest_by_architecture(L40S, [B200, H100, L40S_OTHER, T4])[0] == L40S_OTHER
    assert nearest_by_architecture(H100, [B200, L40S, T4])[0] == L40S  # one generation apart, closer SM


def synthetic_gains(
    noise: dict[str, float], kernels: int = 60
) -> dict[str, dict[tuple[str, str, str], float]]:
    """A shared effect per kernel, plus per-target noise of the given scale."""
    rng = np.random.default_rng(7)
    truth = rng.normal(size=kernels)
    return {
        name: {("compile", "{}", f"k{i}"): float(truth[i] + rng.normal(scale=scale)) for i in range(kernels)}
        for name, scale in noise.items()
    }


def test_matrix_is_symmetric_and_counts_common_effects() -> None:
    gains = synthetic_gains({"a100": 0.1, "h100": 0.1, "t4": 3.0})
    del gains["t4"][("compile", "{}", "k0")]
    cells = {
        (c.source, c.destination): c for c in transfer_matrix(gains, ["a100", "h100", "t4"], resamples=100)
    }
    assert len(cells) == 6
    assert cells[("a100", "h100")].rank_correlation == cells[("h100", "a100")].rank_correlation
    assert cells[("a100", "t4")].pairs == 59 and cells[("a100", "h100")].pairs == 60
    assert (
        (cells[("a100", "h100")].rank_correlation or 0) > 0.9 > (cells[("a100", "t4")].rank_correlation or 0)
    )


def test_a_source_that_transfers_well_to_similar_targets_weighs_more() -> None:
    # l40s-b (the held-out GPU's twin) and h100 agree with everyone; t4 is noise.
    gains = synthetic_gains({"l40s-b": 0.2, "h100": 0.2, "a100": 0.2, "t4": 5.0, "l40s": 0.2})
    sources = [L40S_OTHER, H100, A100, T4]
    weights = source_weights(L40S, sources, gains)
    assert weights["t4"][1] < min(weights[s.name][1] for s in sources if s is not T4)
    assert max(weights, key=lambda name: weights[name][1]) == "l40s-b"
    predictions, _ = predict(L40S, sources, gains)
    effects = sorted(gains["l40s"])
    ours = [predictions[e][0] for e in effects]
    measured = [gains["l40s"][e] for e in effects]
    nearest = predict_nearest(L40S, sources, gains, effects)
    assert (spearman(ours, measured) or 0) >= (spearman([nearest[e] for e in effects], measured) or 0) - 0.05
    # Changing what the held-out target measured changes nothing in its prediction.
    shuffled = {**gains, "l40s": {e: -v for e, v in gains["l40s"].items()}}
    assert predict(L40S, sources, shuffled)[0] == predictions
    means = predict_transform_mean(sources, gains, effects)
    assert len(set(means.values())) == 1  # one transform: one global mean, whatever the kernel
    assert all(math.isfinite(v) for v, _ in predictions.values())
