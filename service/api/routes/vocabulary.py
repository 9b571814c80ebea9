"""GET /v1/vocabulary: the names an agent chooses from (service/vocabulary.py)."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter

from kernelgraph.service.api.deps import KnowledgeDep, ReadNamespaces
from kernelgraph.service.api.responses import keyed
from kernelgraph.service.vocabulary import vocabulary

router = APIRouter(tags=["experience"])


@router.get("/vocabulary", responses=keyed())
def get_vocabulary(knowledge: KnowledgeDep, namespaces: ReadNamespaces) -> dict[str, Any]:
    """The vocabulary: transforms (with what each does and how often the caller's namespaces tried and
    kept it), tasks (family, patterns, backends, instances), access patterns, families, backends, and
    per counter source the signature dimensions it fills (from which counters, Nsight Compute's raw
    metric names included), those it cannot fill and every counter name it reads; also the signature's
    dimensions, the outcomes and the retrieval modes. `shipped: false` when the agent is not installed
    beside the service (then transforms are the names the graph holds, and tasks are empty)."""
    return vocabulary(knowledge.list_transforms(namespaces))
