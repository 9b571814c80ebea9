"""Prometheus metrics of the service, served at GET /metrics (text exposition format).

- `kernelgraph_http_requests_total{method, route, status}` and
  `kernelgraph_http_request_duration_seconds{method, route}` (histogram): every request, by route
  template (`/v1/kernels/{kernel_id}/lineage`, never the raw path, so the label set stays bounded);
- `kernelgraph_http_requests_in_flight`;
- `kernelgraph_neo4j_up` (1 when Neo4j answered a connectivity check during this scrape, else 0),
  `kernelgraph_neo4j_pool_connections{state="in_use"|"idle"}` and
  `kernelgraph_neo4j_pool_max_size`: the driver's connection pool, read at scrape time;
- `kernelgraph_rate_limited_total`: requests refused with 429;
- `kernelgraph_target_cache_hits_total` / `_misses_total`: target lookups served from the knowledge
  service's short-lived target cache, and those that went to Neo4j;
- `kernelgraph_group_commit_transactions_total` / `_requests_total`: write transactions of the
  group-commit writer and the record requests they held (their ratio: the mean group size).

Each app has its own registry, so several apps in one process (tests) never share counters.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily
from prometheus_client.registry import Collector
from starlette.types import ASGIApp, Message, Receive, Scope, Send

# Request latencies of this service run from ~1 ms (cached reads) to seconds (batches, transfer matrix).
LATENCY_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)


def pool_stats(driver: Any) -> tuple[int, int] | None:
    """(in use, idle) connections of the driver's pool; None when this driver version hides them.

    The neo4j driver has no public pool statistics; its pool keeps `connections` (address -> deque
    of connections, each with `in_use`), read here defensively.
    """
    pool = getattr(driver, "_pool", None)
    connections = getattr(pool, "connections", None)
    if not isinstance(connections, dict):
        return None
    try:
        every = [c for deque in list(connections.values()) for c in list(deque)]
        in_use = sum(1 for c in every if getattr(c, "in_use", False))
    except (TypeError, RuntimeError):
        return None
    return in_use, len(every) - in_use


class _Neo4jCollector(Collector):
    """Neo4j health and the driver's pool, measured when Prometheus scrapes."""

    def __init__(self, state_of: Any) -> None:
        self.state_of = state_of

    def collect(self) -> Iterator[GaugeMetricFamily | CounterMetricFamily]:
        state = self.state_of()
        if state is None:  # before the lifespan has built the state
            return
        up = GaugeMetricFamily("kernelgraph_neo4j_up", "1 when Neo4j answered a connectivity check now.")
        up.add_metric([], 1.0 if state.store.ping() else 0.0)
        yield up
        stats = pool_stats(state.driver)
        if stats is not None:
            pool = GaugeMetricFamily(
                "kernelgraph_neo4j_pool_connections", "Connections of the driver's pool.", labels=["state"]
            )
            pool.add_metric(["in_use"], float(stats[0]))
            pool.add_metric(["idle"], float(stats[1]))
            yield pool
        hits, misses = (getattr(state.knowledge, f"target_cache_{kind}", None) for kind in ("hits", "misses"))
        if isinstance(hits, int) and isinstance(misses, int):
            for kind, value in (("hits", hits), ("misses", misses)):
                counter = CounterMetricFamily(f"kernelgraph_target_cache_{kind}",
                                              f"Target lookups {'served from' if kind == 'hits' else 'missing'} the target cache.")  # fmt: skip
                counter.add_metric([], float(value))
                yield counter
        writer = getattr(state.knowledge, "writer", None)
        if writer is not None:  # group commit (service/writer.py): how many requests share a transaction
            for name, value, help_text in (
                ("transactions", writer.transactions, "Write transactions committed by the group-commit writer."),
                ("requests", writer.jobs, "Record requests those transactions answered without an error of their own (requests / transactions: "
                 "the mean group size)."),
            ):  # fmt: skip
                counter = CounterMetricFamily(f"kernelgraph_group_commit_{name}", help_text)
                counter.add_metric([], float(value))
                yield counter
        size = getattr(
            getattr(getattr(state.driver, "_pool", None), "pool_config", None),
            "max_connection_pool_size",
            None,
        )
        if isinstance(size, int):
            limit = GaugeMetricFamily("kernelgraph_neo4j_pool_max_size", "Most connections the pool opens.")
            limit.add_metric([], float(size))
            yield limit


class ServiceMetrics:
    """The app's registry and instruments."""

    def __init__(self, state_of: Any) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        self.requests = Counter("kernelgraph_http_requests", "HTTP requests answered.",
                                ["method", "route", "status"], registry=self.registry)  # fmt: skip
        self.latency = Histogram("kernelgraph_http_request_duration_seconds", "Time to answer an HTTP request.",
                                 ["method", "route"], buckets=LATENCY_BUCKETS, registry=self.registry)  # fmt: skip
        self.in_flight = Gauge("kernelgraph_http_requests_in_flight", "HTTP requests being answered.",
                               registry=self.registry)  # fmt: skip
        self.rate_limited = Counter("kernelgraph_rate_limited", "Requests refused with 429 (per-key rate limit).",
                                    registry=self.registry)  # fmt: skip
        self.registry.register(_Neo4jCollector(state_of))


def route_of(scope: Scope) -> str:
    """The matched route's full template (`/v1/kernels/{kernel_id}/lineage`), or `unmatched` (no route
    matched, or the request was refused before routing).

    A route inside an included router knows only its own part of the path, so the prefix is what the
    request path holds before the route's part, rendered with the request's path parameters.
    """
    route = scope.get("route")
    template, rendered = getattr(route, "path", None), getattr(route, "path_format", None)
    if not isinstance(template, str) or not isinstance(rendered, str):
        return "unmatched"
    path = str(scope.get("path", ""))
    try:
        suffix = rendered.format(**scope.get("path_params", {}))
    except (KeyError, IndexError, ValueError):
        return template
    return path[: len(path) - len(suffix)] + template if suffix and path.endswith(suffix) else template


class MetricsMiddleware:
    """Times every HTTP request and counts it by method, route template and status."""

    def __init__(self, app: ASGIApp, metrics: ServiceMetrics) -> None:
        self.app = app
        self.metrics = metrics

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        status = 500
        started = time.perf_counter()

        async def send_and_note(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = int(message["status"])
            await send(message)

        self.metrics.in_flight.inc()
        try:
            await self.app(scope, receive, send_and_note)
        finally:
            self.metrics.in_flight.dec()
            route, method = route_of(scope), scope["method"]
            self.metrics.latency.labels(method, route).observe(time.perf_counter() - started)
            self.metrics.requests.labels(method, route, str(status)).inc()
            if status == 429:
                self.metrics.rate_limited.inc()
