"""Hardware targets: register them (writers) and list them with how much experience each holds."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter
from pydantic import BaseModel, ConfigDict, Field

from kernelgraph.core.models import MAX_BATCH, HardwareTarget
from kernelgraph.service.api.deps import KnowledgeDep, ReadNamespaces, RecorderDep, WriteNamespace
from kernelgraph.service.api.responses import keyed

router = APIRouter(tags=["targets"])


class TargetsIn(BaseModel):
    model_config = ConfigDict(extra="forbid")

    targets: Annotated[list[HardwareTarget], Field(min_length=1, max_length=MAX_BATCH)]


class TargetsUpserted(BaseModel):
    namespace: str
    names: list[str]


class TargetsOut(BaseModel):
    targets: list[dict[str, Any]]


@router.post("/targets", responses=keyed(403, 409, body=True))
def upsert_targets(
    body: TargetsIn, knowledge: KnowledgeDep, namespace: WriteNamespace, recorder: RecorderDep
) -> TargetsUpserted:
    """Create or update hardware targets in the caller's namespace (writer or admin key).

    A target must exist before attempts measured on it are recorded. Upserting the same name again
    updates its properties, but changing a stored target's `peak_gflops` or `peak_gbps` needs an
    admin key (403 otherwise; the change is logged): every recorded time is checked against them.
    A name given twice in one request is a 422.
    """
    names = knowledge.upsert_targets(namespace, list(body.targets), recorder)
    return TargetsUpserted(namespace=namespace, names=names)


@router.get("/targets", responses=keyed())
def list_targets(knowledge: KnowledgeDep, namespaces: ReadNamespaces) -> TargetsOut:
    """Every hardware target the caller may read, with its counts of measurements and attempts."""
    return TargetsOut(targets=knowledge.list_targets(namespaces))
