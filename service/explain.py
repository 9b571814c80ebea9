"""Why a retrieval found little: the answer's `explanation` (core.models.RetrievalExplanation).

Given when fewer than `k` neighbours were found, so that an agent that sent what its profiler gives
learns which dimensions were missing (and which counters fill them), how many states the namespaces
and the target hold, and what was filtered out, instead of an empty list (cypher/retrieval_coverage.cypher).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from kernelgraph.core.models import MissingDimension, RetrievalExplanation, RetrieveRequest
from kernelgraph.core.ncu import dimension_reads
from kernelgraph.core.signature import DIMENSION_NAMES, MIN_SHARED_DIMENSIONS, SIGNATURE_DIM, Signature
from kernelgraph.service.store import Reader

COVERAGE_LIMIT = 100_000  # states read at most: an explanation must stay cheap on a large graph


def explain(
    reader: Reader, namespaces: Sequence[str], req: RetrieveRequest, signature: Signature | None, found: int
) -> RetrievalExplanation:
    """The explanation of a retrieval that found `found` (< k) neighbours."""
    values = list(signature.values) if signature is not None else [None] * SIGNATURE_DIM
    measured = [i for i, v in enumerate(values) if v is not None]
    rows = reader.read(
        "retrieval_coverage", namespaces=list(namespaces), target=req.target, signature=values,
        min_shared=min(len(measured), MIN_SHARED_DIMENSIONS) if measured else MIN_SHARED_DIMENSIONS,
        exclude_tasks=req.excluded_tasks, limit=COVERAGE_LIMIT,
    )  # fmt: skip
    states = sum(r["states"] for r in rows)
    on_target = sum(r["states"] for r in rows if r["on_target"])
    by_signature = signature is not None and req.mode.value in ("counters", "hybrid")
    comparable = sum(r["states"] for r in rows if r["comparable"]) if by_signature else states
    excluded = sum(r["states"] for r in rows if r["excluded"] and (r["comparable"] or not by_signature))
    blocked: Counter[int] = Counter()
    for row in rows:
        for i in row["lacks"]:
            blocked[i] += row["states"]
    reads = dimension_reads(req.counter_source) if req.counter_source is not None else {}
    missing = [
        MissingDimension(dimension=name, fill_with=reads.get(name), blocked_states=blocked[i])
        for i, name in enumerate(DIMENSION_NAMES) if i not in measured
    ] if by_signature else []  # fmt: skip
    summary = _summary(req, found, states, on_target, comparable, excluded, missing, by_signature)
    return RetrievalExplanation(
        measured_dimensions=[DIMENSION_NAMES[i] for i in measured], missing_dimensions=missing,
        states=states, states_on_target=on_target, comparable_states=comparable,
        excluded_by_task=excluded, summary=summary,
    )  # fmt: skip


def _summary(
    req: RetrieveRequest, found: int, states: int, on_target: int, comparable: int, excluded: int,
    missing: list[MissingDimension], by_signature: bool,
) -> str:  # fmt: skip
    parts = [
        f"{found} of k={req.k} neighbours found; the namespaces hold {states} explored states "
        f"({on_target} on {req.target})"
    ]
    if by_signature:
        parts.append(f"{comparable} can be compared with this query")
        blocking = sorted((m for m in missing if m.blocked_states), key=lambda m: -m.blocked_states)
        for m in blocking[:3]:
            fix = f"send {m.fill_with}" if m.fill_with else "its counter source cannot measure it"
            parts.append(f"{m.blocked_states} measured {m.dimension}, which this query lacks ({fix})")
    if excluded:
        parts.append(f"{excluded} left out by exclude_task(s)")
    if req.transforms is not None:
        parts.append(f"only states with evidence for the query's {len(req.transforms)} transforms count")
    if states == 0:
        parts.append("nothing is recorded here yet: record attempts first")
    return "; ".join(parts)
