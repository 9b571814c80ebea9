"""Deleting a namespace (admin keys only), with a dry run that counts what would go."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Path, Query
from pydantic import BaseModel

from kernelgraph.core.errors import Conflict, Forbidden
from kernelgraph.core.models import Role
from kernelgraph.service import namespaces
from kernelgraph.service.api.deps import PrincipalDep, StateDep
from kernelgraph.service.api.responses import keyed

router = APIRouter(tags=["namespaces"])


class NamespaceDeleted(BaseModel):
    namespace: str
    dry_run: bool
    deleted: bool  # False on a dry run, and when the namespace held nothing
    nodes: dict[str, int]  # per label, what the namespace held (on a dry run: what would go)
    relationships: int
    api_keys: int  # the namespace's API keys, which go with it


@router.delete("/namespaces/{namespace}", responses=keyed(409))
def delete_namespace(
    namespace: Annotated[
        str, Path(pattern=r"^[a-z0-9][a-z0-9_\-]{0,63}$", description="The namespace to delete.")
    ],
    state: StateDep,
    principal: PrincipalDep,
    dry_run: Annotated[bool, Query(description="Only count what would be deleted.")] = False,
) -> NamespaceDeleted:
    """Delete everything a namespace holds (targets, kernels, measurements, attempts, its API keys).

    Admin keys only (403 otherwise). With `dry_run=true`, nothing is deleted and the answer counts,
    per label, what would go. An admin key cannot delete its own namespace (409): it would delete
    itself; use another namespace's admin key or `kernelgraph namespaces delete`.
    """
    if principal.role is not Role.ADMIN:
        raise Forbidden(f"only an admin key may delete a namespace (this key is a {principal.role.value})",
                        field="authorization")  # fmt: skip
    if namespace == principal.namespace and not dry_run:
        raise Conflict(
            f"an admin key of namespace {namespace!r} cannot delete its own namespace (and itself); "
            "use an admin key of another namespace or `kernelgraph namespaces delete`",
            field="namespace",
        )
    if dry_run:
        held = namespaces.contents(state.store, namespace)
    else:
        held = namespaces.delete(state.store, namespace)
        state.authenticator.forget_namespace(namespace)
    return NamespaceDeleted(
        namespace=namespace, dry_run=dry_run, deleted=not dry_run and held.total_nodes > 0,
        nodes=held.nodes, relationships=held.relationships, api_keys=held.api_keys,
    )  # fmt: skip
