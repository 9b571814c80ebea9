"""`create_app(settings)`: the FastAPI application of the knowledge service.

The lifespan opens the process's one Neo4j driver (or uses the one passed in, which the caller then
owns) and builds GraphStore, KnowledgeService and the lazy embedder once. Migrations are not applied
here: `kernelgraph migrate` does that. With KERNELGRAPH_CONSOLIDATE_INTERVAL_S > 0 the lifespan also runs
consolidation on that schedule in a background thread (service/consolidation.py), stopped before the driver closes. One handler shapes every error as
`{"error": {"code", "message", "field"?, "details"?}}` with the error's status code.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, PlainTextResponse
from neo4j import Driver
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from kernelgraph.core.errors import (
    InvalidInput,
    KernelGraphError,
    PayloadTooLarge,
    RateLimited,
    Retryable,
    UnsupportedMediaType,
)
from kernelgraph.core.models import error_location, error_message
from kernelgraph.core.settings import Settings
from kernelgraph.service.api.metrics import MetricsMiddleware, ServiceMetrics
from kernelgraph.service.api.ratelimit import RateLimiter
from kernelgraph.service.api.state import ServiceState
from kernelgraph.service.auth import KeyAuthenticator
from kernelgraph.service.consolidation import ConsolidationSchedule
from kernelgraph.service.knowledge import KnowledgeService
from kernelgraph.service.store import GraphStore, open_driver

log = logging.getLogger(__name__)

# A batch of 1,000 attempts with ordinary kernel sources is a few MiB; this bounds what one request
# may make the process hold in memory.
MAX_BODY_BYTES = 32 * 1024 * 1024
_BODY_METHODS = frozenset({"POST", "PUT", "PATCH"})


def error_body(exc: KernelGraphError) -> dict[str, Any]:
    return {"error": exc.to_dict()}


def error_response(exc: KernelGraphError, headers: Mapping[str, str] | None = None) -> JSONResponse:
    out = dict(headers or {})
    if isinstance(exc, Retryable | RateLimited):
        out["Retry-After"] = str(exc.retry_after_s)
    if isinstance(exc, RateLimited):
        out["X-RateLimit-Limit"] = str(exc.limit)
    return JSONResponse(error_body(exc), status_code=exc.status_code, headers=out or None)


def _field_of(loc: tuple[Any, ...] | list[Any]) -> str | None:
    """('body', 'attempts', 3, 'speedup') -> 'attempts[3].speedup'."""
    parts = list(loc)
    if parts and parts[0] in ("body", "query", "path", "header", "cookie"):
        parts = parts[1:]
    text = ""
    for part in parts:
        if isinstance(part, int):
            text += f"[{part}]"
        else:
            text += f".{part}" if text else str(part)
    return text or None


def _from_validation(exc: RequestValidationError) -> InvalidInput:
    errors = list(exc.errors())
    if not errors:
        return InvalidInput("invalid request")
    problems = [
        {"field": _field_of(error_location(e)) or "body", "problem": str(e.get("msg", ""))} for e in errors
    ]
    first = errors[0]
    if first.get("type") == "json_invalid":
        return InvalidInput(f"body is not valid JSON: {first.get('msg', '')}", field="body", details=problems)
    field = problems[0]["field"]
    return InvalidInput(error_message(field, first), field=field, details=problems)


async def handle_error(request: Request, exc: Exception) -> JSONResponse:
    """The one error handler: every failure becomes the same JSON shape with the right status."""
    headers: Mapping[str, str] | None = None
    if isinstance(exc, KernelGraphError):
        error = exc
    elif isinstance(exc, RequestValidationError):
        error = _from_validation(exc)
    elif isinstance(exc, StarletteHTTPException):
        error = KernelGraphError(str(exc.detail))
        error.status_code = exc.status_code
        error.code = {404: "not_found", 405: "method_not_allowed", 400: "bad_request"}.get(
            exc.status_code, "http_error"
        )
        headers = exc.headers
        if exc.status_code == 405:  # Starlette's `Allow` names one route's methods; a path may have several
            headers = {**(headers or {}), "Allow": ", ".join(_allowed_methods(request))}
    else:
        log.exception("unhandled error on %s %s", request.method, request.url.path)
        error = KernelGraphError("internal error; the service log has the details")
    if error.status_code >= 500 and not isinstance(error, Retryable):
        log.error("%s on %s %s: %s", error.code, request.method, request.url.path, error.message)
    return error_response(error, headers)


def _allowed_methods(request: Request) -> list[str]:
    """Every method some route answers on this request's path."""
    methods: set[str] = set()
    for route in request.app.routes:
        regex, route_methods = getattr(route, "path_regex", None), getattr(route, "methods", None)
        if regex is not None and route_methods and regex.match(request.url.path):
            methods |= set(route_methods)
    return sorted(methods)


class BodyGuard:
    """Rejects bodies over `max_bytes` (413) and non-JSON bodies (415) before the app reads them.

    A declared Content-Length over the limit is refused without reading; a chunked body is read up
    to the limit, then replayed to the app, so no request can make the process hold more.
    """

    def __init__(self, app: ASGIApp, max_bytes: int = MAX_BODY_BYTES) -> None:
        self.app = app
        self.max_bytes = max_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] not in _BODY_METHODS:
            await self.app(scope, receive, send)
            return
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
        too_large = PayloadTooLarge(f"request body over {self.max_bytes} bytes", field="body")
        declared = headers.get("content-length")
        if declared is not None and declared.isdigit() and int(declared) > self.max_bytes:
            await error_response(too_large)(scope, receive, send)
            return
        content_type = headers.get("content-type", "").split(";")[0].strip().lower()
        if content_type != "application/json" and (declared is None or declared != "0"):
            unsupported = UnsupportedMediaType(
                f"send JSON with `Content-Type: application/json` (got {content_type or 'none'!r})",
                field="content-type",
            )
            await error_response(unsupported)(scope, receive, send)
            return
        chunks: list[bytes] = []
        size = 0
        more = True
        while more:
            message = await receive()
            if message["type"] == "http.disconnect":
                return
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > self.max_bytes:
                await error_response(too_large)(scope, receive, send)
                return
            chunks.append(chunk)
            more = message.get("more_body", False)
        body = b"".join(chunks)
        replayed = False

        async def replay() -> Message:
            nonlocal replayed
            if not replayed:
                replayed = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()

        await self.app(scope, replay, send)


def create_app(
    settings: Settings, *, driver: Driver | None = None, max_body_bytes: int = MAX_BODY_BYTES
) -> FastAPI:
    """The service app. With `driver`, the caller owns it; otherwise the lifespan opens and closes one."""
    from kernelgraph.service.api.routes import (
        attempts,
        experience,
        health,
        namespaces,
        targets,
        trust,
        vocabulary,
    )
    from kernelgraph.service.embeddings import MiniLMEmbedder

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        drv = driver if driver is not None else open_driver(settings)
        schedule: ConsolidationSchedule | None = None
        try:
            store = GraphStore(drv, settings.neo4j_database)
            app.state.kg = ServiceState(
                settings=settings,
                driver=drv,
                store=store,
                knowledge=KnowledgeService(store, MiniLMEmbedder()),  # the model loads on first text query
                authenticator=KeyAuthenticator(store),
                limiter=RateLimiter(settings.rate_limit_per_s, settings.rate_limit_burst),
            )
            if settings.consolidate_interval_s > 0:
                schedule = ConsolidationSchedule(store, settings.consolidate_interval_s)
                schedule.start()
            yield
        finally:
            app.state.kg = None
            if schedule is not None:
                schedule.stop()  # before the driver it uses closes
            if driver is None:
                drv.close()

    app = FastAPI(
        title="KernelGraph",
        version="1",
        description="An experience graph on Neo4j that kernel-optimizing agents read from and write to. "
        "Authenticate with `Authorization: Bearer <key>` (`kernelgraph keys create`). Errors are "
        '`{"error": {"code", "message", "field"?, "details"?}}`.',
        lifespan=lifespan,
        docs_url="/docs",
    )
    app.state.kg = None
    metrics = ServiceMetrics(lambda: app.state.kg)
    for exc_type in (KernelGraphError, RequestValidationError, StarletteHTTPException, Exception):
        app.add_exception_handler(exc_type, handle_error)
    app.add_middleware(BodyGuard, max_bytes=max_body_bytes)
    app.add_middleware(MetricsMiddleware, metrics=metrics)  # outermost: times everything, 413s included
    for module in (health, targets, attempts, experience, namespaces, trust, vocabulary):
        app.include_router(module.router, prefix="/v1")

    @app.get(
        "/metrics",
        tags=["health"],
        response_class=PlainTextResponse,
        responses={
            200: {"content": {"text/plain": {"schema": {"type": "string"}}}, "description": "Metrics."}
        },
    )
    def prometheus_metrics() -> PlainTextResponse:
        """Prometheus metrics (text format): request latency per route, Neo4j health, the connection pool.

        Needs no API key, like /v1/health: expose it to your Prometheus, not to the world.
        """
        return PlainTextResponse(generate_latest(metrics.registry), media_type=CONTENT_TYPE_LATEST)

    app.openapi = lambda: _openapi(app)  # type: ignore[method-assign]
    return app


def _openapi(app: FastAPI) -> dict[str, Any]:
    """FastAPI's schema plus MeasurementRecord, which POST /v1/measurements/batch's items name by $ref."""
    if app.openapi_schema is not None:
        return app.openapi_schema
    from fastapi.openapi.utils import get_openapi

    from kernelgraph.core.models import MeasurementRecord

    spec = get_openapi(title=app.title, version=app.version, description=app.description, routes=app.routes)
    schemas = spec.setdefault("components", {}).setdefault("schemas", {})
    extra = MeasurementRecord.model_json_schema(ref_template="#/components/schemas/{model}")
    for name, schema in extra.pop("$defs", {}).items():
        schemas.setdefault(name, schema)
    schemas.setdefault("MeasurementRecord", extra)
    app.openapi_schema = spec
    return spec
