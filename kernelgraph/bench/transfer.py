"""Leave one target out: can the graph predict what torch.compile does on a GPU it has never measured?

For each target with measured effects, every other target is a source; the held-out target's own
measurements are used only to score the predictions, never to make them (service/transfer.py makes
them from the sources' gains and the held-out target's datasheet facts). Scored on every
(transform, kernel) effect measured on the held-out target that at least one source measured:
- Spearman of predicted vs measured log speedup, and the accuracy of "helps" (speedup > 1) vs "hurts";
- against two baselines: the global mean effect of the transform, and the single nearest target by
  architecture; plus an ablation, the plain mean over sources (same sources, equal weights);
- 95% bootstrap intervals (effects resampled), and paired intervals of "ours minus baseline" from
  the same resamples.
Nothing is tuned: the method's constants are fixed in service/transfer.py.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from kernelgraph.bench.stats import (
    BOOTSTRAP_RESAMPLES,
    bootstrap_indices,
    percentile_interval,
    spearman,
    spearman_rows,
)
from kernelgraph.core.models import TransferMatrixResponse
from kernelgraph.service.transfer import (
    EffectKey,
    Gains,
    TargetFacts,
    nearest_by_architecture,
    predict,
    predict_nearest,
    predict_transform_mean,
    predict_uniform,
)

OURS = "transfer-weighted"
BASELINES = ("transform mean", "nearest architecture")
ABLATION = "uniform mean"
METHODS = (OURS, *BASELINES, ABLATION)


def _metrics(predicted: np.ndarray, measured: np.ndarray, index: np.ndarray) -> dict[str, Any]:
    rho = spearman(predicted, measured)
    accuracy = float(np.mean((predicted > 0) == (measured > 0)))
    rho_rows = spearman_rows(predicted[index], measured[index])
    accuracy_rows = np.mean((predicted[index] > 0) == (measured[index] > 0), axis=1)
    return {
        "rank_correlation": rho,
        "rank_correlation_ci": percentile_interval(rho_rows),
        "helps_hurts_accuracy": accuracy,
        "helps_hurts_accuracy_ci": percentile_interval(accuracy_rows),
        "_rho_rows": rho_rows,
        "_accuracy_rows": accuracy_rows,
    }


def evaluate_held_out(
    held_out: TargetFacts, sources: Sequence[TargetFacts], gains: Gains, resamples: int = BOOTSTRAP_RESAMPLES
) -> dict[str, Any]:
    """Score every method on one held-out target (see the module docstring)."""
    measured_gains = gains.get(held_out.name, {})
    ours, weights = predict(held_out, sources, gains, sorted(measured_gains))
    effects: list[EffectKey] = sorted(ours)
    predictions = {
        OURS: {e: ours[e][0] for e in effects},
        "transform mean": predict_transform_mean(sources, gains, effects),
        "nearest architecture": predict_nearest(held_out, sources, gains, effects),
        ABLATION: predict_uniform(sources, gains, effects),
    }
    measured = np.array([measured_gains[e] for e in effects])
    index = bootstrap_indices(len(effects), resamples)
    methods: dict[str, dict[str, Any]] = {}
    for name, values in predictions.items():
        assert set(values) == set(effects), f"{name} does not cover every effect"
        methods[name] = _metrics(np.array([values[e] for e in effects]), measured, index)
    for name in (*BASELINES, ABLATION):
        rho_gain = methods[OURS]["_rho_rows"] - methods[name]["_rho_rows"]
        accuracy_gain = methods[OURS]["_accuracy_rows"] - methods[name]["_accuracy_rows"]
        methods[name]["ours_minus_this_rank_correlation_ci"] = percentile_interval(rho_gain)
        methods[name]["ours_minus_this_accuracy_ci"] = percentile_interval(accuracy_gain)
    for scores in methods.values():
        del scores["_rho_rows"], scores["_accuracy_rows"]
    nearest = nearest_by_architecture(held_out, sources)[0].name
    transforms = sorted({e[0] for e in effects})
    return {
        "target": held_out.name,
        "family": held_out.family,
        "effects": len(effects),
        "transforms": transforms,
        "nearest_by_architecture": nearest,
        "top_sources": [
            {"target": name, "estimated_rank_correlation": rho, "weight": w}
            for name, (rho, w) in sorted(weights.items(), key=lambda item: -item[1][1])[:3]
        ],
        "methods": methods,
        "verdict": verdict(methods),
    }


def _beats(methods: dict[str, dict[str, Any]], baseline: str) -> str:
    ours, other = methods[OURS]["rank_correlation"], methods[baseline]["rank_correlation"]
    if other is None:
        # A constant prediction (one transform on this target) has no ranking: compare helps/hurts.
        low, _ = methods[baseline]["ours_minus_this_accuracy_ci"]
        better = methods[OURS]["helps_hurts_accuracy"] > methods[baseline]["helps_hurts_accuracy"]
        return ("yes" if low is not None and low > 0 else "tie or n.s.") if better else "no"
    low, _ = methods[baseline]["ours_minus_this_rank_correlation_ci"]
    if ours is not None and ours > other:
        return "yes" if low is not None and low > 0 else "yes, n.s."
    return "no"


def verdict(methods: dict[str, dict[str, Any]]) -> dict[str, str]:
    """Per baseline: 'yes' (ours higher, paired CI above 0), 'yes, n.s.' (higher, CI includes 0), or 'no'."""
    return {name: _beats(methods, name) for name in BASELINES}


def leave_one_target_out(
    targets: Sequence[TargetFacts],
    gains: Gains,
    resamples: int = BOOTSTRAP_RESAMPLES,
    say: Callable[[str], None] = lambda text: None,
) -> dict[str, Any]:
    """Evaluate every target held out in turn; returns the report saved under results/."""
    rows = []
    for number, held_out in enumerate(targets, 1):
        if not gains.get(held_out.name):
            continue
        say(f"[{number}/{len(targets)}] holding out {held_out.name}")
        sources = [t for t in targets if t.name != held_out.name]
        rows.append(evaluate_held_out(held_out, sources, gains, resamples))
    beaten = {name: sum(r["verdict"][name] == "yes" for r in rows) for name in BASELINES}
    return {
        "protocol": __doc__,
        "resamples": resamples,
        "targets": [t.name for t in targets],
        "held_out": rows,
        "summary": {"held_out_targets": len(rows), "beats_with_ci_above_zero": beaten},
    }


def plot_transfer_matrix(
    names: Sequence[str], families: Sequence[str], cells: Sequence[Any], path: Path, title: str
) -> Path:
    """A heat map of the rank correlations, targets in architecture order, pairs counts in the cells."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    position = {name: i for i, name in enumerate(names)}
    size = len(names)
    values = np.full((size, size), np.nan)
    pairs = np.zeros((size, size), dtype=int)
    for cell in cells:
        i, j = position[cell.source], position[cell.destination]
        values[i, j] = cell.rank_correlation if cell.rank_correlation is not None else np.nan
        pairs[i, j] = cell.pairs
    np.fill_diagonal(values, 1.0)
    labels = [f"{name} ({family})" for name, family in zip(names, families, strict=True)]
    figure, axes = plt.subplots(figsize=(2.0 + 0.9 * size, 1.5 + 0.8 * size))
    image = axes.imshow(values, vmin=0.0, vmax=1.0, cmap="viridis")
    axes.set_xticks(range(size), labels, rotation=45, ha="right", fontsize=8)
    axes.set_yticks(range(size), labels, fontsize=8)
    for i in range(size):
        for j in range(size):
            if i != j and not math.isnan(values[i, j]):
                colour = "black" if values[i, j] > 0.6 else "white"
                axes.text(j, i, f"{values[i, j]:.2f}\nn={pairs[i, j]}", ha="center", va="center",
                          fontsize=6.5, color=colour)  # fmt: skip
    axes.set_xlabel("destination target")
    axes.set_ylabel("source target")
    axes.set_title(title, fontsize=10)
    figure.colorbar(image, ax=axes, label="Spearman rank correlation of log speedups")
    figure.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path, dpi=130)
    plt.close(figure)
    return path


def transfer_finding(matrix: TransferMatrixResponse) -> list[str]:
    """What a GPU buyer should take from a transfer matrix, in a few sentences computed from it."""
    family = {t.name: t.family for t in matrix.targets}
    cells = [c for c in matrix.cells if c.rank_correlation is not None and c.source < c.destination]
    if not cells:
        return ["no two targets share a measured effect: nothing transfers yet"]

    def mean(values: list[float]) -> float | None:
        return sum(values) / len(values) if values else None

    rho = {(c.source, c.destination): c.rank_correlation or 0.0 for c in cells}
    same = mean([r for (a, b), r in rho.items() if family[a] == family[b]])
    across = mean([r for (a, b), r in rho.items() if family[a] != family[b]])
    ranked = sorted(cells, key=lambda c: c.rank_correlation or 0.0)

    def show(cell: Any) -> str:
        ci = f" [{cell.ci_low:.2f}, {cell.ci_high:.2f}]" if cell.ci_low is not None else ""
        return (f"{cell.source} <-> {cell.destination}: Spearman {cell.rank_correlation:.2f}{ci} over "
                f"{cell.pairs} pairs")  # fmt: skip

    lines = [f"strongest transfer: {show(ranked[-1])}", f"weakest transfer: {show(ranked[0])}"]
    if same is not None and across is not None:
        lines.append(
            f"within one architecture family the mean rank correlation is {same:.2f}, across families "
            f"{across:.2f}: experience measured on a GPU of the same family predicts best"
        )
    return lines
