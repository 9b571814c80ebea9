"""Retrieval: the transforms that worked from measured states like a given one, ranked, with their evidence.

Neighbour states by counter signature (every state scored exactly in a small namespace, the per-source
vector indexes with over-fetch in a large one), by source text (embeddings), by task label or all of
them; then their transforms, aggregated (cypher/aggregate_transforms.cypher). docs/retrieval.md
explains the knobs below.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from kernelgraph.core.errors import InvalidInput, NotFound
from kernelgraph.core.models import (
    RetrievalExplanation,
    RetrievalMode,
    RetrievedTransform,
    RetrieveRequest,
    RetrieveResponse,
    TargetWeight,
    validate,
)
from kernelgraph.core.ncu import dimension_reads
from kernelgraph.core.signature import (
    MIN_SHARED_DIMENSIONS,
    SOURCE_SCALES_PARAM,
    SOURCE_UNITS_PARAM,
    Signature,
    compute_signature,
    index_searches,
    signature_from_values,
)
from kernelgraph.service.embeddings import Embedder
from kernelgraph.service.explain import explain
from kernelgraph.service.recorder import SERVICE, Recorder
from kernelgraph.service.store import GraphStore, Reader
from kernelgraph.service.target_similarity import OTHER_TARGET_WEIGHT, target_weights
from kernelgraph.service.targets import Targets, peaks_of

# Up to this many explored states, every one is scored exactly: exact answers for small namespaces,
# for a few ms more than the index above a few hundred states (docs/retrieval.md estimates it).
EXACT_SEARCH_MAX_STATES = 1_000
OVERFETCH = 5  # index candidates fetched per wanted neighbour, before namespace/task filtering
MAX_FETCH_K = 2_000
MAX_LABEL_STATES = 5_000  # label and global modes weigh states alike; beyond this, a sample of them
FAILURE_LOG_SPEEDUP = -0.1  # a failed attempt (no runtime) costs a little: it wasted a try
PRIOR_WEIGHT = 1.0  # shrinks transforms seen only a few times, far away, towards zero
MERGED_STATE_SHARE = 4  # a merged state takes at most k / 4 of the k neighbour slots
# Evidence trust (docs/api.md, docs/retrieval.md "No writer dominates"):
INFLUENCE_BOUND = 0.1  # the most another key's evidence moves a transform's score in your retrieval
LEGACY_KEY = "legacy"  # the recorder of evidence stored before keys were tracked (schema 0015)


class Retrieval:
    """Retrieval for one service: remembers, per namespace set, whether it is past exact-search size
    and the index over-fetch that sufficed."""

    def __init__(self, store: GraphStore, targets: Targets, embedder: Embedder | None = None) -> None:
        self.store = store
        self.targets = targets
        self.embedder = embedder
        self._large: set[tuple[str, ...]] = set()  # namespace sets past exact-search size
        self._overfetch: dict[tuple[Any, ...], int] = {}  # over-fetch that sufficed (`_nearest_in_index`)

    def retrieve(
        self, namespaces: Sequence[str], request: RetrieveRequest | dict[str, Any], reader: Recorder = SERVICE
    ) -> RetrieveResponse:
        """Transforms that worked from measured states like the given one, ranked, with their evidence.

        `reader`'s own evidence counts in full; every other key's moves a transform's score by less
        than INFLUENCE_BOUND (aggregate_transforms.cypher)."""
        req = request if isinstance(request, RetrieveRequest) else validate(RetrieveRequest, request)
        spaces = list(namespaces)
        target = self.targets.get(spaces, [req.target]).get(req.target)
        if target is None:
            raise NotFound(f"unknown target {req.target!r}", field="target")
        # What each mode needs, the request model checked (core/models.py RetrieveRequest).
        signature = self._request_signature(req, target)
        embedding: list[float] | None = None
        if req.mode in (RetrievalMode.TEXT, RetrievalMode.HYBRID) and req.source:
            self.embed_pending(spaces)  # writes, so before the read transaction
            embedding = self._embedder().embed([req.source])[0]

        # Every query of one retrieval in one read transaction: fewer round trips (docs/scaling.md).
        def read(
            tx: Reader,
        ) -> tuple[dict[str, float], list[dict[str, Any]], RetrievalExplanation | None, list[dict[str, Any]]]:
            # What each other target's evidence weighs: its measured similarity (service/target_similarity.py).
            weights = target_weights(tx, spaces, req.target)
            found, rows = self._neighbours_and_transforms(
                tx, spaces, req, signature, embedding, reader, weights
            )
            # Found little: say why (service/explain.py), in the same transaction as what it explains.
            why = explain(tx, spaces, req, signature, len(found)) if len(found) < req.k else None
            return found, rows, why, weights

        neighbours, rows, explanation, weights = self.store.read_transaction(read)
        transforms = [retrieved_transform(row) for row in rows]
        keys = {key for row in rows for key in row["keys"]}
        ranked = sorted(neighbours, key=lambda m: (-neighbours[m], m))
        return RetrieveResponse(
            mode=req.mode,
            target=req.target,
            signature=list(signature.values) if signature is not None else None,
            neighbours=len(neighbours),
            neighbour_ids=ranked,
            neighbour_scores=[neighbours[m] for m in ranked],
            transforms=transforms,
            failure_log_speedup=FAILURE_LOG_SPEEDUP,
            prior_weight=PRIOR_WEIGHT,
            evidence_attempts=sum(t.attempts for t in transforms),
            verified_attempts=sum(t.verified_attempts for t in transforms),
            evidence_keys=len(keys),
            verified_only=req.verified_only,
            influence_bound=INFLUENCE_BOUND,
            other_target_weight=OTHER_TARGET_WEIGHT,
            target_weights=[TargetWeight(**w) for w in weights],
            explanation=explanation,
        )

    def _neighbours_and_transforms(
        self,
        reader: Reader,
        spaces: list[str],
        req: RetrieveRequest,
        signature: Signature | None,
        embedding: list[float] | None,
        recorder: Recorder,
        weights: Sequence[dict[str, Any]] = (),
    ) -> tuple[dict[str, float], list[dict[str, Any]]]:
        """The neighbour states (id -> similarity) of a retrieval and the aggregate_transforms rows."""
        neighbours: dict[str, float] = {}
        if signature is not None and req.mode in (RetrievalMode.COUNTERS, RetrievalMode.HYBRID):
            for row in _within_slots(self._nearest_by_signature(reader, spaces, signature, req), req.k):
                neighbours[row["measurement_id"]] = row["score"]
        if embedding is not None:
            for row in _within_slots(self._nearest_by_source(reader, spaces, embedding, req), req.k):
                # Hybrid: a state found both ways keeps the mean of its two similarities.
                previous = neighbours.get(row["measurement_id"])
                neighbours[row["measurement_id"]] = (
                    row["score"] if previous is None else (previous + row["score"]) / 2
                )
        if req.mode in (RetrievalMode.LABEL, RetrievalMode.GLOBAL):
            for row in reader.read(
                "states_by_task",
                tasks=req.tasks if req.mode is RetrievalMode.LABEL else None,
                namespaces=spaces, exclude_tasks=req.excluded_tasks, limit=MAX_LABEL_STATES,
                **_vocabulary(req),
            ):  # fmt: skip
                neighbours[row["measurement_id"]] = row["score"]
        rows = aggregate_rows(reader, neighbours, spaces, req, weights, [recorder.key_id, LEGACY_KEY])
        return neighbours, rows

    def _request_signature(self, req: RetrieveRequest, target: dict[str, Any]) -> Signature | None:
        if req.signature is not None:
            return signature_from_values(req.signature)
        if req.counters is None or req.counter_source is None:  # the model requires the source with counters
            return None
        signature = compute_signature(req.counter_source, req.counters, peaks_of(target))
        if not signature.measured:
            reads = "; ".join(f"{d}: {r}" for d, r in dimension_reads(req.counter_source).items())
            raise InvalidInput(
                f"the counters measure no signature dimension of counter source {req.counter_source.value!r} "
                f"on this target; it reads {reads} (docs/api.md, 'What each counter source fills'; "
                "GET /v1/vocabulary or the MCP tool vocabulary lists the names)",
                field="counters",
            )
        return signature

    def _nearest_by_signature(
        self, reader: Reader, namespaces: list[str], signature: Signature, req: RetrieveRequest
    ) -> list[dict[str, Any]]:
        """The k states nearest to `signature` by the masked, renormalised distance (docs/retrieval.md).

        Small namespaces: every explored state scored exactly. Large ones: one vector index per counter
        source whose states the query can be compared with (`index_searches`), plus exact scoring of the
        few states whose signature is incomplete for their source (kept out of the indexes).
        """
        measured = list(signature.measured)
        if not measured:
            return []
        exact = {
            "signature": list(signature.vector), "measured": measured,
            "min_shared": min(len(measured), MIN_SHARED_DIMENSIONS), "k": req.k, "namespaces": namespaces,
            "exclude_tasks": req.excluded_tasks, "source_scales": SOURCE_SCALES_PARAM,
            "source_units": SOURCE_UNITS_PARAM, **_vocabulary(req),
        }  # fmt: skip
        if self._small(reader, namespaces):
            return reader.read("nearest_states_by_signature_exact", **exact, complete=[True, False])
        rows = reader.read("nearest_states_by_signature_exact", **exact, complete=[False])
        searches = [s.as_param() for s in index_searches(signature)]
        if searches:
            rows += self._nearest_in_index(
                reader, "nearest_states_by_signature", namespaces, req, searches=searches
            )
        rows.sort(key=lambda r: (-r["score"], r["measurement_id"]))
        return rows[: req.k]

    def _nearest_in_index(
        self, reader: Reader, query: str, namespaces: list[str], req: RetrieveRequest, **search: Any
    ) -> list[dict[str, Any]]:
        """The nearest states through a vector index (`query`: the per-source signature indexes or the
        source-text index), fetched until they are the true nearest (`search_index`). The over-fetch that
        sufficed is remembered per query, namespace set and vocabulary (a narrower vocabulary filters more
        candidates out), so the next such retrieval starts there."""
        key = (query, tuple(sorted(namespaces)), tuple(sorted(req.transforms or ())), req.verified_only)
        rows, self._overfetch[key] = search_index(
            reader, query, req.k, self._overfetch.get(key, OVERFETCH), namespaces=namespaces,
            exclude_tasks=req.excluded_tasks, **_vocabulary(req), **search,
        )  # fmt: skip
        return rows

    def largest_fetch_k(self, k: int) -> int | None:
        """The largest `fetch_k` a retrieval of `k` neighbours starts its index searches at now (None before
        any indexed retrieval): how far the over-fetch has grown."""
        return min(k * max(self._overfetch.values()), MAX_FETCH_K) if self._overfetch else None

    def _small(self, reader: Reader, namespaces: list[str]) -> bool:
        """Few enough explored states for exact scoring? A large verdict is kept: nothing is ever deleted."""
        key = tuple(sorted(namespaces))
        if key in self._large:
            return False
        states = reader.read(
            "count_explored_states", namespaces=namespaces, limit=EXACT_SEARCH_MAX_STATES + 1
        )[0]["states"]
        if states > EXACT_SEARCH_MAX_STATES:
            self._large.add(key)
        return states <= EXACT_SEARCH_MAX_STATES

    def _nearest_by_source(
        self, reader: Reader, namespaces: list[str], embedding: list[float], req: RetrieveRequest
    ) -> list[dict[str, Any]]:
        if self._small(reader, namespaces):  # searched as counters are, so the two baselines compare
            return reader.read(
                "nearest_states_by_source_exact",
                embedding=embedding, k=req.k, namespaces=namespaces, exclude_tasks=req.excluded_tasks,
                **_vocabulary(req),
            )  # fmt: skip
        return self._nearest_in_index(
            reader, "nearest_states_by_source", namespaces, req, embedding=embedding
        )

    def _embedder(self) -> Embedder:
        if self.embedder is None:
            raise InvalidInput("text retrieval is not available: this service has no embedder", field="mode")
        return self.embedder

    def embed_pending(self, namespaces: Sequence[str], batch: int = 256) -> int:
        """Embed the sources of kernels recorded since the last call (recording defers it to stay fast)."""
        embedder = self._embedder()
        done = 0
        while True:
            rows = self.store.read("kernels_missing_embedding", namespaces=list(namespaces), limit=batch)
            if not rows:
                return done
            vectors = embedder.embed([row["source"] for row in rows])
            self.store.write(
                "set_kernel_embeddings",
                rows=[
                    {"namespace": r["namespace"], "kernel_id": r["kernel_id"], "embedding": v}
                    for r, v in zip(rows, vectors, strict=True)
                ],
            )
            done += len(rows)


def _vocabulary(req: RetrieveRequest) -> dict[str, Any]:
    """The parameters of the rule "within the query's vocabulary", which every neighbour query and the
    aggregation apply alike: with `transforms`, evidence for any other transform is not read and a
    state without evidence for one of them is no candidate (docs/retrieval.md)."""
    return {"transforms": req.transforms, "verified_only": req.verified_only}


def _within_slots(rows: list[dict[str, Any]], k: int) -> list[dict[str, Any]]:
    """The nearest states, best first, until they hold `k` measurements: a state that consolidation
    merged re-measurements into takes one slot per measurement it stands for (`slots`), at most
    k / MERGED_STATE_SHARE: merging neither widens the neighbourhood to farther states nor lets one
    kernel measured a hundred times push every other state out (docs/retrieval.md)."""
    kept, used = [], 0
    for row in rows:
        if used >= k:
            break
        kept.append(row)
        used += _slots([row], k)
    return kept


def search_index(
    reader: Reader, query: str, k: int, overfetch: int, **params: Any
) -> tuple[list[dict[str, Any]], int]:
    """The k nearest states through a vector index query (nearest_states_by_signature or _by_source) and
    the over-fetch that found them.

    An index holds every namespace's states, held-out tasks' and states without evidence in the
    query's vocabulary; the query filters them out after the index's `fetch_k`, and with several
    per-source indexes each search's candidates are cut alike. So the rows are the true nearest only
    when they fill k slots and the k-th scores at least the query's `frontier` (the best a state no
    search returned could score); until then fetch more (x4, up to MAX_FETCH_K).

    The frontier is a bound only for an exact search, and HNSW's is approximate: a search crowded at
    its first fetch can come back from a larger one with farther states and without nearer ones, and
    look complete (`tests/service/test_index_search.py` once returned the far states so). So an answer
    first complete after the over-fetch grew is taken only once the next larger fetch returns the same
    states; the over-fetch learnt is the smaller one's, so later retrievals start there and need no
    second fetch.
    """
    start = overfetch
    unconfirmed: tuple[set[str], int] | None = None  # a complete answer not yet confirmed, and its over-fetch
    while True:
        fetch = min(k * overfetch, MAX_FETCH_K)
        rows = reader.read(query, **params, fetch_k=fetch, k=k)
        if _complete(rows, k):
            nearest = {row["measurement_id"] for row in _within_slots(rows, k)}
            if overfetch == start:
                return rows, overfetch
            if unconfirmed is not None and nearest == unconfirmed[0]:
                return rows, unconfirmed[1]
            unconfirmed = (nearest, overfetch)
        else:
            unconfirmed = None
        if fetch >= MAX_FETCH_K:  # the best there is, but not known to be complete: nothing learnt
            return rows, start
        overfetch *= 4


def _complete(rows: list[dict[str, Any]], k: int) -> bool:
    """Are `rows` (best first) the true nearest? Yes when they fill k slots and the k-th scores at least
    the frontier, which no state beyond the searches' candidates can beat, or when the frontier is 0
    (no state the searches missed can score above 0)."""
    if not rows:
        return False
    if rows[0]["frontier"] == 0:
        return True
    kept = _within_slots(rows, k)
    return _slots(kept, k) >= k and kept[-1]["score"] >= kept[-1]["frontier"]


def _slots(rows: list[dict[str, Any]], k: int) -> int:
    """Neighbour slots the rows take: one per measurement a state stands for, at most k / MERGED_STATE_SHARE."""
    most = max(1, k // MERGED_STATE_SHARE)
    return sum(min(int(row.get("slots") or 1), most) for row in rows)


def aggregate_rows(
    reader: Reader, neighbours: Mapping[str, float], namespaces: list[str], req: RetrieveRequest,
    weights: Sequence[Mapping[str, Any]], own_keys: Sequence[str],
) -> list[dict[str, Any]]:  # fmt: skip
    """The transforms the evidence of `neighbours` (measurement id -> similarity) supports
    (cypher/aggregate_transforms.cypher, under the service's constants and trust rules, within the
    query's vocabulary), as rows: what `retrieve` returns, and what study v3 reads at equal weights."""
    if not neighbours:
        return []
    return reader.read(
        "aggregate_transforms",
        neighbours=[{"measurement_id": m, "score": s} for m, s in neighbours.items()],
        namespaces=namespaces, target=req.target, other_target_weight=OTHER_TARGET_WEIGHT,
        target_weights={w["target"]: w["weight"] for w in weights},
        failure_log_speedup=FAILURE_LOG_SPEEDUP, prior_weight=PRIOR_WEIGHT, limit=req.limit,
        own_keys=list(own_keys), influence_bound=INFLUENCE_BOUND, **_vocabulary(req),
    )  # fmt: skip


def retrieved_transform(row: dict[str, Any]) -> RetrievedTransform:
    """A row of aggregate_transforms with its JSON-encoded parameters decoded."""
    best = row["best_example"]
    if best is not None:
        best = {**best, "params": json.loads(best["params"])}
    by_params = [{**p, "params": json.loads(p["params"])} for p in row["by_params"]]
    return RetrievedTransform(
        **{
            **row,
            "best_example": best,
            "params": [json.loads(p) for p in row["params"]],
            "by_params": by_params,
            "keys": len(row["keys"]),
        }
    )
