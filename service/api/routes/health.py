"""GET /v1/health: is the service up and can it reach Neo4j (no key needed)."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter

from kernelgraph.core.errors import Retryable
from kernelgraph.service import migrate
from kernelgraph.service.api.deps import StateDep
from kernelgraph.service.api.responses import errors

router = APIRouter(tags=["health"])


@router.get("/health", responses=errors(503))
def health(state: StateDep) -> dict[str, Any]:
    """Liveness, Neo4j reachability and the schema: 200 when Neo4j answers and every migration this
    service's queries rely on is applied; 503 (with `Retry-After`) otherwise, so a load balancer keeps
    traffic off a replica whose database is behind it (`kernelgraph schema apply` brings it up to date).

    Needs no API key, so load balancers and `kernelgraph` itself can probe it.
    """
    if not state.store.ping():
        raise Retryable("Neo4j is unreachable", field="neo4j")
    pending = [m.name for m in migrate.status(state.store) if not m.applied]
    if pending:
        raise Retryable(
            f"the database schema is behind this service: {len(pending)} migration(s) pending "
            f"({', '.join(pending)}); run `kernelgraph schema apply`",
            field="schema",
        )
    return {"status": "ok", "neo4j": "reachable", "database": state.store.database, "schema": "up to date"}
