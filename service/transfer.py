"""Cross-target transfer: the transfer matrix, and predictions for a target never measured.

Pure computation over "gains" (natural log speedups of a transform on a kernel, per target) and the
targets' datasheet facts; no store, HTTP or MCP in here (KnowledgeService feeds it, the benchmark in
kernelgraph/bench/transfer.py evaluates it). docs/transfer.md explains the method and shows its results.

The prediction's knobs are fixed a priori from the model below, not tuned on the data they are
evaluated on:
- source weight = rho^2 / (1 - rho^2), the inverse-variance weight of a source whose gains correlate
  with the target's by rho (one common factor plus independent noise), rho clipped to [0, RHO_MAX];
- rho of a source to a held-out target = the similarity-weighted mean of its measured rank
  correlations to the other targets (its correlation to itself counting as 1), where similarity
  = exp(-distance) and distance = |ln ratio of FP32 peaks| + |ln ratio of bandwidths| + 1 per
  architecture generation apart.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from kernelgraph.service.stats import BOOTSTRAP_RESAMPLES, BOOTSTRAP_SEED, spearman, spearman_ci

# Architecture families in generation order, by CUDA compute capability (SM version).
FAMILIES: tuple[tuple[str, int, int], ...] = (
    ("Volta", 70, 74),
    ("Turing", 75, 79),
    ("Ampere", 80, 88),
    ("Ada", 89, 89),
    ("Hopper", 90, 99),
    ("Blackwell", 100, 129),
)
UNKNOWN_FAMILY = "unknown"
MIN_PAIRS = 20  # a correlation over fewer (transform, kernel) pairs is too noisy to weight anything by
RHO_MAX = 0.95  # keeps rho^2 / (1 - rho^2) finite: no source is ever taken as the truth
_SM = re.compile(r"^sm_?([0-9]+)$", re.IGNORECASE)

EffectKey = tuple[str, str, str]  # transform, params (JSON), kernel_id
Gains = Mapping[str, Mapping[EffectKey, float]]  # target -> effect -> ln speedup


@dataclass(frozen=True)
class TargetFacts:
    """What is known of a target without measuring anything on it: datasheet peaks and architecture."""

    name: str
    arch: str
    peak_gflops: float | None = None
    peak_gbps: float | None = None

    @property
    def sm(self) -> int | None:
        match = _SM.match(self.arch)
        return int(match.group(1)) if match else None

    @property
    def family(self) -> str:
        sm = self.sm
        return next((f for f, low, high in FAMILIES if sm is not None and low <= sm <= high), UNKNOWN_FAMILY)

    @property
    def generation(self) -> int | None:
        names = [f for f, _, _ in FAMILIES]
        return names.index(self.family) if self.family in names else None


def architecture_order(targets: Sequence[TargetFacts]) -> list[TargetFacts]:
    """Oldest architecture first (Turing, Ampere, Ada, Hopper, Blackwell), unknown last, then by name."""
    return sorted(targets, key=lambda t: (t.sm if t.sm is not None else 10_000, t.name))


def _log_ratio(a: float | None, b: float | None) -> float:
    return abs(math.log(a / b)) if a and b else 1.0  # unknown peaks: as far as a factor of e


def distance(a: TargetFacts, b: TargetFacts) -> float:
    """How unlike two targets are on paper: peaks apart (log ratios) plus generations apart."""
    generations = (
        abs(a.generation - b.generation) if a.generation is not None and b.generation is not None else 2
    )
    return _log_ratio(a.peak_gflops, b.peak_gflops) + _log_ratio(a.peak_gbps, b.peak_gbps) + generations


def similarity(a: TargetFacts, b: TargetFacts) -> float:
    return math.exp(-distance(a, b))


@dataclass(frozen=True)
class Cell:
    """Transfer from `source` to `destination`: rank correlation of the same effects on both."""

    source: str
    destination: str
    pairs: int
    rank_correlation: float | None
    ci_low: float | None
    ci_high: float | None
    agreement: float | None  # share of pairs where both say "helps" or both say "hurts"


def common_effects(gains: Gains, a: str, b: str) -> tuple[np.ndarray, np.ndarray]:
    keys = sorted(set(gains.get(a, {})) & set(gains.get(b, {})))
    return (
        np.array([gains[a][k] for k in keys], dtype=float),
        np.array([gains[b][k] for k in keys], dtype=float),
    )


def transfer_matrix(
    gains: Gains,
    targets: Sequence[str],
    *,
    resamples: int = BOOTSTRAP_RESAMPLES,
    seed: int = BOOTSTRAP_SEED,
) -> list[Cell]:
    """Every ordered pair of distinct `targets` (Spearman is symmetric: each pair is computed once)."""
    cells: list[Cell] = []
    done: dict[tuple[str, str], Cell] = {}
    for source in targets:
        for destination in targets:
            if source == destination:
                continue
            mirror = done.get((destination, source))
            if mirror is not None:
                cells.append(Cell(source, destination, mirror.pairs, mirror.rank_correlation,
                                  mirror.ci_low, mirror.ci_high, mirror.agreement))  # fmt: skip
                continue
            xs, ys = common_effects(gains, source, destination)
            low, high = spearman_ci(xs, ys, resamples, seed) if resamples else (None, None)
            cell = Cell(
                source, destination, int(xs.size), spearman(xs, ys), low, high,
                float(np.mean((xs > 0) == (ys > 0))) if xs.size else None,
            )  # fmt: skip
            done[(source, destination)] = cell
            cells.append(cell)
    return cells


def source_weights(
    held_out: TargetFacts, sources: Sequence[TargetFacts], gains: Gains
) -> dict[str, tuple[float, float]]:
    """Per source: (estimated rho to `held_out`, weight), from the sources' transfer among themselves.

    Nothing measured on `held_out` is used: only its datasheet facts and the other targets' gains.
    """
    correlation: dict[tuple[str, str], float] = {}
    for i, a in enumerate(sources):
        for b in sources[i + 1 :]:
            xs, ys = common_effects(gains, a.name, b.name)
            rho = spearman(xs, ys) if xs.size >= MIN_PAIRS else None
            if rho is not None:
                correlation[(a.name, b.name)] = correlation[(b.name, a.name)] = rho
    weights: dict[str, tuple[float, float]] = {}
    for source in sources:
        total = weighted = 0.0
        for other in sources:
            rho = 1.0 if other.name == source.name else correlation.get((source.name, other.name))
            if rho is None:
                continue
            s = similarity(held_out, other)
            total += s
            weighted += s * rho
        estimate = weighted / total if total > 0 else 0.0
        clipped = min(max(estimate, 0.0), RHO_MAX)
        weights[source.name] = (estimate, clipped**2 / (1 - clipped**2))
    return weights


def predict(
    held_out: TargetFacts,
    sources: Sequence[TargetFacts],
    gains: Gains,
    effects: Sequence[EffectKey] | None = None,
) -> tuple[dict[EffectKey, tuple[float, int]], dict[str, tuple[float, float]]]:
    """Predicted ln speedup of each effect on `held_out` (with how many sources measured it), and the
    source weights used. `effects` default: every effect measured on any source."""
    weights = source_weights(held_out, sources, gains)
    wanted = effects if effects is not None else sorted({k for s in sources for k in gains.get(s.name, {})})
    predictions: dict[EffectKey, tuple[float, int]] = {}
    for effect in wanted:
        total = weighted = 0.0
        count = 0
        for source in sources:
            gain = gains.get(source.name, {}).get(effect)
            if gain is None:
                continue
            count += 1
            total += weights[source.name][1]
            weighted += weights[source.name][1] * gain
        if count and total > 0:
            predictions[effect] = (weighted / total, count)
        elif count:  # every source that measured it has weight 0: fall back to their plain mean
            values = [gains[s.name][effect] for s in sources if effect in gains.get(s.name, {})]
            predictions[effect] = (sum(values) / len(values), count)
    return predictions, weights


def predict_transform_mean(
    sources: Sequence[TargetFacts], gains: Gains, effects: Sequence[EffectKey]
) -> dict[EffectKey, float]:
    """Baseline: the global mean effect of the transform (all kernels, all sources), whatever the kernel."""
    sums: dict[tuple[str, str], list[float]] = {}
    for source in sources:
        for (transform, params, _), gain in gains.get(source.name, {}).items():
            sums.setdefault((transform, params), []).append(gain)
    means = {key: sum(v) / len(v) for key, v in sums.items()}
    return {e: means[(e[0], e[1])] for e in effects if (e[0], e[1]) in means}


def nearest_by_architecture(held_out: TargetFacts, sources: Sequence[TargetFacts]) -> list[TargetFacts]:
    """Sources from nearest to farthest by architecture: generations apart, SM versions apart, then peaks."""

    def key(source: TargetFacts) -> tuple[float, float, float, str]:
        generations = (
            abs(held_out.generation - source.generation)
            if held_out.generation is not None and source.generation is not None
            else 99
        )
        sms = abs(held_out.sm - source.sm) if held_out.sm is not None and source.sm is not None else 999
        peaks = _log_ratio(held_out.peak_gflops, source.peak_gflops) + _log_ratio(
            held_out.peak_gbps, source.peak_gbps
        )
        return generations, sms, peaks, source.name

    return sorted(sources, key=key)


def predict_nearest(
    held_out: TargetFacts, sources: Sequence[TargetFacts], gains: Gains, effects: Sequence[EffectKey]
) -> dict[EffectKey, float]:
    """Baseline: the effect on the single nearest target by architecture that measured it."""
    ordered = nearest_by_architecture(held_out, sources)
    out: dict[EffectKey, float] = {}
    for effect in effects:
        for source in ordered:
            gain = gains.get(source.name, {}).get(effect)
            if gain is not None:
                out[effect] = gain
                break
    return out


def predict_uniform(
    sources: Sequence[TargetFacts], gains: Gains, effects: Sequence[EffectKey]
) -> dict[EffectKey, float]:
    """Ablation: the plain mean over sources of the same effect (every source weighted alike)."""
    out: dict[EffectKey, float] = {}
    for effect in effects:
        values = [gains[s.name][effect] for s in sources if effect in gains.get(s.name, {})]
        if values:
            out[effect] = sum(values) / len(values)
    return out
