"""Typed dependencies of the routes: the shared state, the knowledge service, the caller and its namespaces."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Header, Query, Request
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

from kernelgraph.client.errors import InvalidInput
from kernelgraph.client.settings import Settings
from kernelgraph.service.api.app import ServiceState
from kernelgraph.service.auth import Principal
from kernelgraph.service.knowledge import KnowledgeService

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
    """The caller, from its bearer key (401 when missing or unknown)."""
    return state.authenticator.authenticate(credentials.credentials if credentials else None)


PrincipalDep = Annotated[Principal, Depends(get_principal)]

NamespaceQuery = Annotated[
    str | None,
    Query(
        description="Namespace(s) to act on, comma-separated. Default: the key's own. "
        "Only an admin key may name another namespace.",
        max_length=1024,
    ),
]
NamespaceHeader = Annotated[
    str | None,
    Header(alias="X-KernelGraph-Namespace", description="Same as the `namespace` query parameter."),
]


def _requested(query: str | None, header: str | None) -> list[str]:
    raw = query if query is not None else header
    return [part.strip() for part in raw.split(",") if part.strip()] if raw else []


def read_namespaces(
    principal: PrincipalDep, namespace: NamespaceQuery = None, x_namespace: NamespaceHeader = None
) -> list[str]:
    """The namespaces the caller reads: its own, or, for an admin, the ones it names."""
    return principal.readable(_requested(namespace, x_namespace))


def write_namespace(
    principal: PrincipalDep, namespace: NamespaceQuery = None, x_namespace: NamespaceHeader = None
) -> str:
    """The one namespace the caller writes to (403 for readers and for another team's namespace)."""
    requested = _requested(namespace, x_namespace)
    if len(requested) > 1:
        raise InvalidInput("writes go to exactly one namespace", field="namespace")
    return principal.writable(requested[0] if requested else None)


ReadNamespaces = Annotated[list[str], Depends(read_namespaces)]
WriteNamespace = Annotated[str, Depends(write_namespace)]
