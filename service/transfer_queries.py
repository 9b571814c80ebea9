"""What a transform's effect on one target says about its effect on another: the four transfer
questions the service answers from stored measurements (the maths is service/transfer.py; what each
other target's evidence weighs in retrieval is service/target_similarity.py)."""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from typing import Any

from kernelgraph.core.errors import NotFound
from kernelgraph.core.models import (
    PredictedEffect,
    SourceWeight,
    TransferCell,
    TransferMatrixResponse,
    TransferPrediction,
    TransferResponse,
    TransferRow,
    TransferTarget,
)
from kernelgraph.service.retrieval import FAILURE_LOG_SPEEDUP
from kernelgraph.service.stats import spearman
from kernelgraph.service.store import GraphStore
from kernelgraph.service.target_similarity import target_gains
from kernelgraph.service.targets import Targets
from kernelgraph.service.transfer import EffectKey, TargetFacts, predict, similarity, transfer_matrix


class TransferQueries:
    """The transfer questions over one service's store and target cache."""

    def __init__(self, store: GraphStore, targets: Targets) -> None:
        self.store = store
        self.targets = targets

    def transfer(
        self, namespaces: Sequence[str], source: str, destination: str, pattern: str | None = None
    ) -> TransferResponse:
        """Does a transform's effect on `source` predict its effect on `destination`?"""
        known = self.targets.get(namespaces, [source, destination])
        for name, field in ((source, "source_target"), (destination, "destination_target")):
            if name not in known:
                raise NotFound(f"unknown target {name!r}", field=field)
        rows = self.store.read(
            "transfer_pairs",
            namespaces=list(namespaces), source=source, destination=destination, pattern=pattern,
            failure_log_speedup=FAILURE_LOG_SPEEDUP,
        )  # fmt: skip
        by_transform: dict[str, list[dict[str, Any]]] = {}
        for row in rows:
            by_transform.setdefault(row["transform"], []).append(row)
        transforms = []
        for name, pairs in sorted(by_transform.items()):
            xs = [p["source_gain"] for p in pairs]
            ys = [p["destination_gain"] for p in pairs]
            transforms.append(
                TransferRow(
                    transform=name,
                    pairs=len(pairs),
                    rank_correlation=spearman(xs, ys),
                    agreement_rate=sum((x > 0) == (y > 0) for x, y in zip(xs, ys, strict=True)) / len(pairs),
                    mean_log_speedup_source=sum(xs) / len(xs),
                    mean_log_speedup_destination=sum(ys) / len(ys),
                    examples=sorted(pairs, key=lambda p: -p["source_gain"])[:5],
                )
            )
        return TransferResponse(
            source_target=source,
            destination_target=destination,
            pattern=pattern,
            transforms=transforms,
            overall_rank_correlation=spearman(
                [r["source_gain"] for r in rows], [r["destination_gain"] for r in rows]
            ),
        )

    def transfer_data(
        self, namespaces: Sequence[str], transform: str | None = None
    ) -> tuple[list[TargetFacts], dict[str, dict[EffectKey, float]], dict[EffectKey, str]]:
        """Targets (architecture order; superseded ones left out), their measured gains, kernel tasks."""
        return target_gains(self.store, namespaces, transform)

    def transfer_matrix(
        self, namespaces: Sequence[str], transform: str | None = None, resamples: int = 1_000
    ) -> TransferMatrixResponse:
        """For every ordered pair of targets: Spearman of the log speedups of the same transform on the
        same kernel, the number of such pairs and a bootstrap 95% CI; targets in architecture order."""
        targets, gains, _ = self.transfer_data(namespaces, transform)
        cells = transfer_matrix(gains, [t.name for t in targets], resamples=resamples)
        return TransferMatrixResponse(
            transform=transform,
            resamples=resamples,
            targets=[
                TransferTarget(
                    name=t.name,
                    arch=t.arch,
                    family=t.family,
                    peak_gflops=t.peak_gflops,
                    peak_gbps=t.peak_gbps,
                    effects=len(gains[t.name]),
                )
                for t in targets
            ],
            cells=[TransferCell(**vars(c)) for c in cells],
        )

    def predict_transfer(
        self, namespaces: Sequence[str], target: str, transform: str | None = None
    ) -> TransferPrediction:
        """Predict each effect on `target` from the other targets alone, each weighted by its measured
        transfer to targets like `target` (service/transfer.py). Whatever `target` itself measured is
        held out of the prediction and only reported next to it."""
        stored = self.targets.get(namespaces, [target]).get(target)
        if stored is None:
            raise NotFound(f"unknown target {target!r}", field="target")
        facts = TargetFacts(
            target, str(stored.get("arch", "")), stored.get("peak_gflops"), stored.get("peak_gbps")
        )
        targets, gains, tasks = self.transfer_data(namespaces, transform)
        sources = [t for t in targets if t.name != target]
        predictions, weights = predict(facts, sources, gains)
        measured = gains.get(target, {})
        effects = [
            PredictedEffect(
                transform=key[0],
                params=json.loads(key[1]),
                kernel_id=key[2],
                task=tasks[key],
                predicted_speedup=math.exp(value),
                sources=count,
                measured_speedup=math.exp(measured[key]) if key in measured else None,
            )
            for key, (value, count) in sorted(predictions.items(), key=lambda item: -item[1][0])
        ]
        both = [key for key in predictions if key in measured]
        return TransferPrediction(
            target=target,
            transform=transform,
            weights=[
                SourceWeight(
                    target=s.name,
                    similarity=similarity(facts, s),
                    estimated_rank_correlation=weights[s.name][0],
                    weight=weights[s.name][1],
                )
                for s in sorted(sources, key=lambda s: -weights[s.name][1])
            ],
            predictions=effects,
            rank_correlation_with_measured=spearman(
                [predictions[k][0] for k in both], [measured[k] for k in both]
            ),
            helps_hurts_accuracy=sum((predictions[k][0] > 0) == (measured[k] > 0) for k in both) / len(both)
            if both
            else None,
        )
