"""What users ask of a stored graph (retrieve, lineage, transfer), asked the same way of every release.

`scripts/upgrade_fixture.py` records a release's graph and its answers with that release's code; the
upgrade test asks the same questions with today's code of the same graph after `schema apply` and
compares. Only the public KnowledgeService API is used, so the questions outlive storage changes.
"""

from __future__ import annotations

import math
from typing import Any

from kernelgraph.core.signature import SIGNATURE_DIM, SIGNATURE_VERSION
from kernelgraph.service.knowledge import KnowledgeService


def older_signature(question: dict[str, Any]) -> bool:
    """A retrieval keyed on a signature of an earlier version: its answer changed by design with
    signature 2 (masked dimensions, measured intensity), 3 (the dimensions the drop rule kept) and 4
    (standardised dimensions, the drop rule on two tasks); the upgrade tests ask it anew. A question
    records its version since signature 3 (scripts/upgrade_fixture.py); before, the length told: 12
    entries were version 1, 11 version 2."""
    signature = question.get("request", {}).get("signature")
    if signature is None:
        return False
    version = question.get("signature_version") or (2 if len(signature) == SIGNATURE_DIM else 1)
    return int(version) < SIGNATURE_VERSION


def exact_text_search(question: dict[str, Any]) -> bool:
    """A retrieval by source text (text or hybrid mode): small namespaces are now scored exactly, as
    counters are (study v2), and the states of one kernel tie on text, so which tied states fill the k
    neighbours changed by design; the transforms recommended must not (`same_transforms`)."""
    return question["call"] == "retrieve" and question.get("request", {}).get("mode") in ("text", "hybrid")


def same_transforms(recorded: list[dict[str, Any]], current: list[dict[str, Any]]) -> bool:
    return {t["transform"] for t in recorded} == {t["transform"] for t in current}


def ask(knowledge: KnowledgeService, question: dict[str, Any]) -> Any:
    """The comparable answer to one recorded question."""
    namespaces = [question["namespace"]]
    if question["call"] == "retrieve":
        response = knowledge.retrieve(namespaces, question["request"])
        return [
            {
                "transform": t.transform,
                "attempts": t.attempts,
                "successes": t.successes,
                "score": round(t.score, 6),
                "evidence_attempt_keys": sorted(t.evidence_attempt_keys),
            }
            for t in response.transforms
        ]
    if question["call"] == "lineage":
        return [step.model_dump() for step in knowledge.lineage(namespaces, question["kernel_id"])]
    if question["call"] == "transfer":
        transfer = knowledge.transfer(namespaces, question["source"], question["destination"])
        return {
            "overall": _rounded(transfer.overall_rank_correlation),
            "transforms": [
                (row.transform, row.pairs, _rounded(row.rank_correlation)) for row in transfer.transforms
            ],
        }
    raise ValueError(f"unknown question call {question['call']!r}")


def _rounded(value: float | None) -> float | None:
    return None if value is None or math.isnan(value) else round(value, 6)


def same_answer(recorded: Any, current: Any) -> bool:
    """Equal up to float rounding (scores are recomputed from stored floats by a different Cypher plan)."""
    if isinstance(recorded, float) or isinstance(current, float):
        return (
            isinstance(recorded, (int, float))
            and isinstance(current, (int, float))
            and math.isclose(recorded, current, rel_tol=1e-4, abs_tol=1e-6)
        )
    if isinstance(recorded, dict) and isinstance(current, dict):
        return recorded.keys() == current.keys() and all(
            same_answer(recorded[k], current[k]) for k in recorded
        )
    if isinstance(recorded, (list, tuple)) and isinstance(current, (list, tuple)):
        return len(recorded) == len(current) and all(
            same_answer(a, b) for a, b in zip(recorded, current, strict=True)
        )
    return bool(recorded == current)
