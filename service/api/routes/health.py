"""GET /v1/health: is the service up and can it reach Neo4j (no key needed)."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter

from kernelgraph.client.errors import Retryable
from kernelgraph.service.api.deps import StateDep
from kernelgraph.service.api.responses import errors

router = APIRouter(tags=["health"])


@router.get("/health", responses=errors(503))
def health(state: StateDep) -> dict[str, Any]:
    """Liveness and Neo4j reachability: 200 when Neo4j answers, 503 (with `Retry-After`) when it does not.

    Needs no API key, so load balancers and `kernelgraph` itself can probe it.
    """
    if not state.store.ping():
        raise Retryable("Neo4j is unreachable", field="neo4j")
    return {"status": "ok", "neo4j": "reachable", "database": state.store.database}
