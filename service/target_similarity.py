"""How much evidence from another target counts in retrieval: by the measured similarity of the targets.

The similarity is the transfer matrix's (service/transfer.py, docs/transfer.md): the Spearman rank
correlation of the log speedups the same transform (same parameters) gave on the same kernel on both
targets, over the effects both measured. Computing it reads every attempt, so retrieval does not:
consolidation (`kernelgraph consolidate`) measures it per namespace and keeps it on
(:HardwareTarget)-[:TRANSFERS_LIKE {rank_correlation, pairs, measured_at}]-(:HardwareTarget) (schema
0017), and retrieval reads the query target's relationships in its read transaction.

The weight (`cross_target_weight`, the one definition; retrieval passes its values to
aggregate_transforms.cypher as $target_weights) is max(0, rho) shrunk toward the prior
OTHER_TARGET_WEIGHT by SHRINK_PAIRS pseudo-pairs: (n * max(0, rho) + k * prior) / (n + k). A target
that ranks transforms oppositely (rho <= 0) tends to weight 0 as pairs accumulate; with no measurement
the weight is the prior.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

from kernelgraph.service.store import GraphStore, Reader
from kernelgraph.service.transfer import (
    MIN_PAIRS,
    EffectKey,
    TargetFacts,
    architecture_order,
    transfer_matrix,
)

OTHER_TARGET_WEIGHT = 0.7  # the prior: evidence from another target counts, but less
# Pseudo-pairs the prior counts as: at MIN_PAIRS measured pairs (below which transfer.py calls a
# correlation too noisy to weight by) the measurement and the prior count equally.
SHRINK_PAIRS = MIN_PAIRS
MIN_MEASURED_PAIRS = 3  # Spearman over fewer pairs is undefined or meaningless: not stored


def cross_target_weight(rank_correlation: float | None, pairs: int) -> float:
    """The weight of evidence from a target whose measured rank correlation with the query target is
    `rank_correlation` over `pairs` (transform, kernel) effects; the prior when none is measured."""
    if rank_correlation is None or pairs <= 0:
        return OTHER_TARGET_WEIGHT
    return (pairs * max(0.0, rank_correlation) + SHRINK_PAIRS * OTHER_TARGET_WEIGHT) / (pairs + SHRINK_PAIRS)


def target_gains(
    store: GraphStore, namespaces: Sequence[str], transform: str | None = None
) -> tuple[list[TargetFacts], dict[str, dict[EffectKey, float]], dict[EffectKey, str]]:
    """Targets (architecture order; superseded ones left out), their measured gains, kernel tasks."""
    facts = {
        r["target"]["name"]: TargetFacts(
            r["target"]["name"], str(r["target"].get("arch", "")), r["target"].get("peak_gflops"),
            r["target"].get("peak_gbps"),
        )
        for r in store.read("list_targets", namespaces=list(namespaces))
        if not r["target"].get("superseded_by")
    }  # fmt: skip
    gains: dict[str, dict[EffectKey, float]] = {}
    tasks: dict[EffectKey, str] = {}
    for row in store.read("transfer_gains", namespaces=list(namespaces), transform=transform):
        if row["target"] not in facts:
            continue
        key = (row["transform"], row["params"], row["kernel_id"])
        gains.setdefault(row["target"], {})[key] = row["gain"]
        tasks[key] = row["task"]
    ordered = architecture_order([f for name, f in facts.items() if name in gains])
    return ordered, gains, tasks


def measure(store: GraphStore, namespace: str, *, dry_run: bool = False) -> int:
    """Measure every pair of the namespace's targets and store what changed; the number changed."""
    targets, gains, _ = target_gains(store, [namespace])
    rows = [
        {"a": c.source, "b": c.destination, "rank_correlation": c.rank_correlation, "pairs": c.pairs}
        for c in transfer_matrix(gains, [t.name for t in targets], resamples=0)
        if c.source < c.destination and c.rank_correlation is not None and c.pairs >= MIN_MEASURED_PAIRS
    ]
    if dry_run:
        return int(store.read("target_similarity_changed", namespace=namespace, rows=rows)[0]["changed"])
    return int(store.write("target_similarity_set", namespace=namespace, rows=rows)[0]["changed"])


def target_weights(reader: Reader, namespaces: Sequence[str], target: str) -> list[dict[str, Any]]:
    """Every other target in `namespaces` with its weight and why (measured rho and pairs, or prior)."""
    weights = []
    for row in reader.read("target_similarity", namespaces=list(namespaces), target=target):
        basis: Literal["measured", "prior"] = "measured" if row["pairs"] else "prior"
        weights.append({
            "target": row["target"], "weight": cross_target_weight(row["rank_correlation"], row["pairs"]),
            "basis": basis, "rank_correlation": row["rank_correlation"], "pairs": row["pairs"],
            "measured_at": row["measured_at"],
        })  # fmt: skip
    return weights
