"""What operators do about a key gone wrong (admin keys only): revoke it, quarantine its evidence."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Path
from pydantic import BaseModel, ConfigDict, Field

from kernelgraph.core.errors import Forbidden
from kernelgraph.core.models import Role
from kernelgraph.service.api.deps import PrincipalDep, StateDep, WriteNamespace
from kernelgraph.service.api.responses import keyed
from kernelgraph.service.auth import Principal, revoke_key

router = APIRouter(tags=["operators"])

KeyId = Annotated[
    str, Path(pattern=r"^[0-9a-f]{12}$", description="A key id, as `kernelgraph keys list` shows.")
]


def _admin(principal: Principal, what: str) -> None:
    if principal.role is not Role.ADMIN:
        raise Forbidden(f"only an admin key may {what} (this key is a {principal.role.value})",
                        field="authorization")  # fmt: skip


class KeyRevoked(BaseModel):
    key_id: str
    namespace: str
    revoked_at: str


@router.post("/keys/{key_id}/revoke", responses=keyed(404))
def revoke(key_id: KeyId, state: StateDep, principal: PrincipalDep) -> KeyRevoked:
    """Revoke an API key (admin only): at once on this replica, within the key cache's 5 s on others."""
    _admin(principal, "revoke a key")
    row = revoke_key(state.store, key_id)
    state.authenticator.forget_key(key_id)
    return KeyRevoked(**row)


class QuarantineIn(BaseModel):
    model_config = ConfigDict(extra="forbid")

    key_id: Annotated[str, Field(pattern=r"^[0-9A-Za-z_.:+\-]{1,128}$")]  # `legacy` too
    dry_run: Annotated[bool, Field(strict=True)] = True  # the default: look before you act
    release: Annotated[bool, Field(strict=True)] = False  # undo an earlier quarantine


class QuarantineOut(BaseModel):
    namespace: str
    key_id: str
    dry_run: bool
    release: bool
    aggregates: int  # per-state aggregates of the key that changed (or would)
    rollups: int
    attempts: int
    transforms: list[str]


@router.post("/quarantine", responses=keyed(body=True))
def quarantine(
    body: QuarantineIn, state: StateDep, principal: PrincipalDep, namespace: WriteNamespace
) -> QuarantineOut:
    """Quarantine one key's evidence in the namespace (admin only), or release it (`release: true`).

    A dry run by default (`dry_run: true`): the answer counts what would change. Quarantined evidence
    stays stored, is left out of retrieval and consolidation, and comes back on release.
    """
    _admin(principal, "quarantine evidence")
    report = state.knowledge.quarantine(namespace, body.key_id, apply=not body.dry_run, release=body.release)
    return QuarantineOut(**report)
