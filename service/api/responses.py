"""The error responses each operation declares in OpenAPI, in the one shape every error has.

Routes declare exactly the statuses they can answer (schemathesis checks the served schema against
the server in tests/service/test_openapi_contract.py): every keyed route can answer 401 (no or an
unknown key), 403 (a namespace the key may not use), 422 (invalid input), 429 (the key's rate limit)
and 503 (Neo4j unreachable or busy; retry after `Retry-After`); every route with a body 400 (unreadable), 413 and 415.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field


class ErrorDetail(BaseModel):
    field: str
    problem: str


class ErrorBodyInner(BaseModel):
    code: str = Field(description="Machine-readable kind, e.g. invalid_input, not_found, rate_limited.")
    message: str = Field(description="What went wrong and, where it helps, how to fix it.")
    field: str | None = Field(default=None, description="The request field the error is about.")
    details: Any = Field(default=None, description="Per-field problems of an invalid request.")


class ErrorOut(BaseModel):
    """Every error response: `{"error": {"code", "message", "field"?, "details"?}}`."""

    error: ErrorBodyInner


_RETRY_AFTER = {
    "Retry-After": {"description": "Seconds to wait before retrying.", "schema": {"type": "integer"}}
}
_RATE_HEADERS = {
    **_RETRY_AFTER,
    "X-RateLimit-Limit": {
        "description": "Requests allowed per second to this key.",
        "schema": {"type": "integer"},
    },
}

_DESCRIPTIONS: dict[int, str] = {
    400: "The body could not be read as JSON text.",
    401: "No API key, or an unknown one.",
    403: "The key may not act on this namespace (or, a reader key, may not write).",
    404: "A named resource (target, kernel, measurement) is not in the caller's namespaces.",
    405: "Method not allowed.",
    409: "A concurrent write conflicted; retrying the same request is safe.",
    413: "The body, or the batch, is too large.",
    415: "The body is not `application/json`.",
    422: "Invalid input: `error.field` names the field, `error.details` lists every problem.",
    429: "The key's rate limit is exceeded; retry after `Retry-After` seconds.",
    503: "Neo4j is unreachable or busy; retry after `Retry-After` seconds (writes are idempotent).",
}
_HEADERS: dict[int, dict[str, Any]] = {429: _RATE_HEADERS, 503: _RETRY_AFTER}

KEYED = (401, 403, 422, 429, 503)
BODY = (400, 413, 415)


def errors(*statuses: int) -> dict[int | str, dict[str, Any]]:
    """OpenAPI `responses` entries for these error statuses, each with the one error shape."""
    declared: dict[int | str, dict[str, Any]] = {}
    for status in sorted(set(statuses)):
        entry: dict[str, Any] = {"model": ErrorOut, "description": _DESCRIPTIONS[status]}
        if status in _HEADERS:
            entry["headers"] = _HEADERS[status]
        declared[status] = entry
    return declared


def keyed(*extra: int, body: bool = False) -> dict[int | str, dict[str, Any]]:
    """The errors of a route that needs a key, plus `extra`; `body`: it also takes a JSON body."""
    return errors(*KEYED, *(BODY if body else ()), *extra)
