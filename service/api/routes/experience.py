"""Reading experience: retrieve transforms for a measured state, transfer across targets, lineage, transforms."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Path, Query
from pydantic import BaseModel
from pydantic import Field as PydanticField

from kernelgraph.core.models import (
    MAX_EVIDENCE_KEYS,
    LineageStep,
    Name,
    RetrieveRequest,
    RetrieveResponse,
    Strict,
    TransferMatrixRequest,
    TransferMatrixResponse,
    TransferPrediction,
    TransferPredictRequest,
    TransferResponse,
)
from kernelgraph.service.api.deps import KnowledgeDep, ReadNamespaces, RecorderDep
from kernelgraph.service.api.responses import keyed

router = APIRouter(tags=["experience"])


class TransferRequest(Strict):
    """Compare how transforms fared on two targets."""

    source_target: Name
    destination_target: Name
    pattern: Name | None = None  # restrict to kernels exhibiting this access pattern


class LineageOut(BaseModel):
    kernel_id: str
    steps: list[LineageStep]


class TransformsOut(BaseModel):
    transforms: list[dict[str, Any]]


@router.post("/retrieve", responses=keyed(404, body=True))
def retrieve(
    request: RetrieveRequest, knowledge: KnowledgeDep, namespaces: ReadNamespaces, reader: RecorderDep
) -> RetrieveResponse:
    """Transforms that worked from measured states like this one, ranked, with the evidence behind each.

    Describe the state by `signature` (the normalized counter vector, version 2: null where not
    measured; docs/counter-signature.md), or by raw `counters` plus
    `counter_source` (the service computes the signature against the `target`'s peaks). `mode`:
    `counters` (nearest signatures), `text` (nearest kernel sources; needs `source`) or `hybrid`.
    `k` neighbours are aggregated into at most `limit` transforms. Unknown target: 404. The caller's
    own evidence counts in full, every other key's moves a score by less than `influence_bound`;
    `verified_only` reads only verified evidence, and the answer says how much is verified.
    """
    return knowledge.retrieve(namespaces, request, reader)


@router.post("/transfer", responses=keyed(404, body=True))
def transfer(
    request: TransferRequest, knowledge: KnowledgeDep, namespaces: ReadNamespaces
) -> TransferResponse:
    """Does a transform's effect on `source_target` predict its effect on `destination_target`?

    Pairs attempts of the same transform on the same parent kernel measured on both targets and
    reports, per transform, the rank correlation and sign agreement of their log speedups.
    """
    return knowledge.transfer(namespaces, request.source_target, request.destination_target, request.pattern)


@router.post("/transfer/matrix", responses=keyed(body=True))
def transfer_matrix(
    request: TransferMatrixRequest, knowledge: KnowledgeDep, namespaces: ReadNamespaces
) -> TransferMatrixResponse:
    """The transfer matrix: for every ordered pair of targets, the Spearman rank correlation of the log
    speedups of the same transform on the same kernel, the number of such pairs and a bootstrap 95% CI.

    Targets come in architecture order (Turing, Ampere, Ada, Hopper, Blackwell). `transform` restricts
    to one transform; `resamples` (0-10,000) sets the bootstrap size (0: no intervals).
    """
    return knowledge.transfer_matrix(namespaces, request.transform, request.resamples)


@router.post("/transfer/predict", responses=keyed(404, body=True))
def predict_transfer(
    request: TransferPredictRequest, knowledge: KnowledgeDep, namespaces: ReadNamespaces
) -> TransferPrediction:
    """Predict the speedup of each transform on each kernel for `target` from the other targets only.

    Each other target is weighted by its measured transfer to targets like `target` (architecture
    generation and datasheet peaks). Whatever `target` measured itself is never used to predict; it is
    returned next to each prediction (`measured_speedup`) with the rank correlation and helps/hurts
    accuracy over those. Unknown target: 404.
    """
    return knowledge.predict_transfer(namespaces, request.target, request.transform)


@router.get("/kernels/{kernel_id}/lineage", responses=keyed(404))
def lineage(
    kernel_id: Annotated[str, Path(pattern=r"^[A-Za-z0-9]+$", max_length=64)],
    knowledge: KnowledgeDep,
    namespaces: ReadNamespaces,
    max_depth: Annotated[int, Query(ge=1, le=200)] = 50,
) -> LineageOut:
    """The kernel and its ancestors, nearest first, each step with the transform, outcome and speedup.

    404 when the kernel is not in a namespace the caller may read.
    """
    return LineageOut(
        kernel_id=kernel_id, steps=knowledge.lineage(namespaces, kernel_id, max_depth=max_depth)
    )


@router.get("/transforms", responses=keyed())
def list_transforms(knowledge: KnowledgeDep, namespaces: ReadNamespaces) -> TransformsOut:
    """Every transform recorded in the caller's namespaces, with how often it was tried and kept."""
    return TransformsOut(transforms=knowledge.list_transforms(namespaces))


class LeaderboardOut(BaseModel):
    rows: list[dict[str, Any]]


@router.get("/leaderboard", responses=keyed())
def leaderboard(
    knowledge: KnowledgeDep,
    namespaces: ReadNamespaces,
    pattern: Annotated[Name | None, Query(description="access pattern, e.g. dense-matmul")] = None,
    target: Annotated[Name | None, Query(description="hardware target, e.g. cpu-native")] = None,
    limit: Annotated[int, Query(ge=1, le=1000)] = 100,
) -> LeaderboardOut:
    """Transforms ranked per access pattern and target: attempts, keep rate, geomean and best speedup."""
    return LeaderboardOut(rows=knowledge.leaderboard(namespaces, pattern=pattern, target=target, limit=limit))


class EvidenceRequest(Strict):
    """Attempt keys, as returned in a retrieved transform's `evidence_attempt_keys`."""

    attempt_keys: Annotated[list[Name], PydanticField(min_length=1, max_length=MAX_EVIDENCE_KEYS)]


class EvidenceOut(BaseModel):
    attempts: list[dict[str, Any]]


@router.post("/evidence", responses=keyed(body=True))
def evidence(request: EvidenceRequest, knowledge: KnowledgeDep, namespaces: ReadNamespaces) -> EvidenceOut:
    """The attempts behind a recommendation, in full: kernels, target, starting state, outcome, speedup."""
    return EvidenceOut(attempts=knowledge.evidence(namespaces, request.attempt_keys))
