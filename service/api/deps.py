"""Typed dependencies of the routes: the shared state, the knowledge service, the caller and its namespaces."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Header, Query, Request
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

from kernelgraph.core.errors import InvalidInput
from kernelgraph.core.models import Role
from kernelgraph.core.settings import Settings
from kernelgraph.service.api.state import ServiceState
from kernelgraph.service.auth import Principal
from kernelgraph.service.knowledge import KnowledgeService
from kernelgraph.service.recorder import Recorder

_bearer = HTTPBearer(auto_error=False, description="An API key from `kernelgraph keys create`.")


def get_state(request: Request) -> ServiceState:
    state: ServiceState = request.app.state.kg
    return state


StateDep = Annotated[ServiceState, Depends(get_state)]


def get_settings(state: StateDep) -> Settings:
    return state.settings


def get_knowledge(state: StateDep) -> KnowledgeService:
    return state.knowledge


SettingsDep = Annotated[Settings, Depends(get_settings)]
KnowledgeDep = Annotated[KnowledgeService, Depends(get_knowledge)]


def get_principal(
    state: StateDep, credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(_bearer)]
) -> Principal:
    """The caller, from its bearer key (401 when missing or unknown; 429 over the key's rate limit)."""
    principal = state.authenticator.authenticate(credentials.credentials if credentials else None)
    state.limiter.check(principal.key_id)
    return principal


PrincipalDep = Annotated[Principal, Depends(get_principal)]


def get_recorder(principal: PrincipalDep) -> Recorder:
    """Who the caller's writes are recorded as: its key, verified only for a verifier key."""
    return Recorder(
        principal.key_id, verified=principal.role is Role.VERIFIER, admin=principal.role is Role.ADMIN
    )


RecorderDep = Annotated[Recorder, Depends(get_recorder)]

_ONE_NAMESPACE = r"[a-z0-9][a-z0-9_\-]{0,63}"
# One or more namespaces, comma-separated: what `check_namespace` accepts.
NAMESPACES_PATTERN = rf"^{_ONE_NAMESPACE}(,{_ONE_NAMESPACE})*$"
NamespaceQuery = Annotated[
    str | None,
    Query(
        description="Namespace(s) to act on, comma-separated; each is 1-64 lowercase letters, digits, "
        "'_' or '-', starting with a letter or digit. Default: the key's own. Only an admin key may "
        "name another namespace (403 otherwise); a write names exactly one.",
        max_length=1024,
        pattern=NAMESPACES_PATTERN,
    ),
]
NamespaceHeader = Annotated[
    str | None,
    Header(
        alias="X-KernelGraph-Namespace",
        description="Same as the `namespace` query parameter (which wins when both are given).",
        max_length=1024,
        pattern=NAMESPACES_PATTERN,
    ),
]


def _requested(query: str | None, header: str | None) -> list[str]:
    raw = query if query is not None else header
    return [part.strip() for part in raw.split(",") if part.strip()] if raw else []


def read_namespaces(
    principal: PrincipalDep, namespace: NamespaceQuery = None, x_namespace: NamespaceHeader = None
) -> list[str]:
    """The namespaces the caller reads: its own, or, for an admin, the ones it names."""
    return principal.readable(_requested(namespace, x_namespace))


ONE_NAMESPACE_PATTERN = rf"^{_ONE_NAMESPACE}$"
WriteNamespaceQuery = Annotated[
    str | None,
    Query(
        description="The one namespace to write to: 1-64 lowercase letters, digits, '_' or '-', starting "
        "with a letter or digit. Default: the key's own; only an admin key may name another (403 otherwise).",
        max_length=1024,
        pattern=ONE_NAMESPACE_PATTERN,
    ),
]
WriteNamespaceHeader = Annotated[
    str | None,
    Header(
        alias="X-KernelGraph-Namespace",
        description="Same as the `namespace` query parameter (which wins when both are given).",
        max_length=1024,
        pattern=ONE_NAMESPACE_PATTERN,
    ),
]


def write_namespace(
    principal: PrincipalDep, namespace: WriteNamespaceQuery = None, x_namespace: WriteNamespaceHeader = None
) -> str:
    """The one namespace the caller writes to (403 for readers and for another team's namespace)."""
    requested = _requested(namespace, x_namespace)
    if len(requested) > 1:
        raise InvalidInput("writes go to exactly one namespace", field="namespace")
    return principal.writable(requested[0] if requested else None)


ReadNamespaces = Annotated[list[str], Depends(read_namespaces)]
WriteNamespace = Annotated[str, Depends(write_namespace)]
