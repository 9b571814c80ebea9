"""Operating the service for a team: per-key rate limits, Prometheus metrics, deleting a namespace."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from typer.testing import CliRunner

from kernelgraph.cli import app as cli_app
from kernelgraph.client import KernelGraphClient
from kernelgraph.core.errors import RateLimited
from kernelgraph.core.models import Role
from kernelgraph.core.settings import Settings
from kernelgraph.service import namespaces
from kernelgraph.service.api.app import create_app
from kernelgraph.service.api.metrics import pool_stats
from kernelgraph.service.api.ratelimit import RateLimiter
from kernelgraph.service.auth import create_key
from kernelgraph.service.store import GraphStore
from tests import factories
from tests.service.conftest import Keys, bearer, make_keys, serve


class FakeClock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_token_bucket_allows_the_burst_then_the_rate_and_says_when_to_retry() -> None:
    clock = FakeClock()
    limiter = RateLimiter(rate_per_s=2.0, burst=3, clock=clock)
    for _ in range(3):
        limiter.check("a")
    with pytest.raises(RateLimited) as refused:
        limiter.check("a")
    assert refused.value.status_code == 429 and refused.value.retry_after_s == 1 and refused.value.limit == 2
    limiter.check("b")  # another key has its own bucket
    clock.now += 0.5  # one token back at 2/s
    limiter.check("a")
    with pytest.raises(RateLimited):
        limiter.check("a")
    clock.now += 10  # refills to the burst, not beyond
    for _ in range(3):
        limiter.check("a")
    with pytest.raises(RateLimited):
        limiter.check("a")
    slow = RateLimiter(rate_per_s=0.2, burst=1, clock=clock)
    slow.check("a")
    with pytest.raises(RateLimited) as wait:
        slow.check("a")
    assert wait.value.retry_after_s == 5
    RateLimiter(rate_per_s=0, burst=1, clock=clock).check("a")  # 0: no limit
    for _ in range(1000):
        RateLimiter(rate_per_s=0, burst=1, clock=clock).check("a")


@pytest.fixture(scope="module")
def limited_url(neo4j_settings: Settings, store: GraphStore) -> Iterator[str]:
    """The app with a tight limit: one request per 5 s per key, bursts of 3."""
    live = serve(
        create_app(neo4j_settings.model_copy(update={"rate_limit_per_s": 0.2, "rate_limit_burst": 3}))
    )
    try:
        yield live.url
    finally:
        live.stop()


@pytest.mark.neo4j
def test_rate_limit_is_per_key_with_429_and_retry_after(limited_url: str, keys: Keys) -> None:
    with httpx.Client(base_url=limited_url, timeout=30) as http:
        answers = [http.get("/v1/targets", headers=bearer(keys.reader)) for _ in range(5)]
        assert [r.status_code for r in answers[:3]] == [200, 200, 200]
        refused = answers[3]
        assert refused.status_code == 429, refused.text
        assert refused.json()["error"]["code"] == "rate_limited"
        assert int(refused.headers["Retry-After"]) >= 1
        assert refused.headers["X-RateLimit-Limit"] == "1"
        assert http.get("/v1/targets", headers=bearer(keys.writer)).status_code == 200  # its own bucket
        assert http.get("/v1/health").status_code == 200  # no key, no limit
        metrics = http.get("/metrics").text
    assert "kernelgraph_rate_limited_total 2.0" in metrics
    # The HTTP client waits Retry-After and tries again, a bounded number of times.
    slept: list[float] = []
    with KernelGraphClient(limited_url, keys.admin, max_retries=2, sleep=slept.append) as client:
        for _ in range(3):
            client.list_targets()
        assert slept == []  # three fit the key's burst
        with pytest.raises(RateLimited):
            client.list_targets()
    assert len(slept) == 2 and all(1.0 <= s <= 5.0 for s in slept)


@pytest.mark.neo4j
def test_metrics_report_latency_per_route_neo4j_health_and_the_pool(http: httpx.Client, keys: Keys) -> None:
    http.get("/v1/targets", headers=bearer(keys.reader))
    http.get("/v1/kernels/abc123/lineage", headers=bearer(keys.reader))  # 404, by its template
    http.get("/v1/nowhere")
    response = http.get("/metrics")
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/plain")
    text = response.text
    assert (
        'kernelgraph_http_request_duration_seconds_bucket{le="0.1",method="GET",route="/v1/targets"}' in text
    )
    assert (
        'kernelgraph_http_requests_total{method="GET",route="/v1/kernels/{kernel_id}/lineage",status="404"}'
        in text
    )
    assert 'route="unmatched",status="404"' in text
    assert "abc123" not in text  # raw paths never become labels
    assert "kernelgraph_neo4j_up 1.0" in text
    assert 'kernelgraph_neo4j_pool_connections{state="in_use"}' in text
    assert "kernelgraph_neo4j_pool_max_size 64.0" in text
    assert "kernelgraph_http_requests_in_flight" in text
    assert "kernelgraph_target_cache_hits_total" in text and "kernelgraph_target_cache_misses_total" in text


def test_metrics_count_group_commit_transactions_and_the_requests_they_held(
    http: httpx.Client, keys: Keys
) -> None:
    def counters() -> dict[str, float]:
        lines = http.get("/metrics").text.splitlines()
        return {name: float(value) for name, _, value in (line.partition(" ") for line in lines)
                if name.startswith("kernelgraph_group_commit_")}  # fmt: skip

    response = http.post("/v1/targets", json={"targets": [factories.target()]}, headers=bearer(keys.writer))
    assert response.status_code == 200, response.text
    before = counters()
    attempt = factories.attempt("metrics-gc:0", child_source="void kernel(void) { /* metrics */ }")
    assert http.post("/v1/attempts", json=attempt, headers=bearer(keys.writer)).status_code == 201
    after = counters()
    # One request on its own: one transaction holding one request.
    assert (
        after["kernelgraph_group_commit_requests_total"] - before["kernelgraph_group_commit_requests_total"]
        == 1
    )
    assert (
        after["kernelgraph_group_commit_transactions_total"]
        - before["kernelgraph_group_commit_transactions_total"]
        == 1
    )


def test_pool_stats_is_none_for_a_driver_without_a_readable_pool() -> None:
    assert pool_stats(object()) is None


def _fill(http: httpx.Client, keys: Keys, attempts: int = 3) -> None:
    response = http.post("/v1/targets", json={"targets": [factories.target()]}, headers=bearer(keys.writer))
    assert response.status_code == 200, response.text
    for i in range(attempts):
        attempt = factories.attempt(f"run-del:{i}", child_source=f"void kernel(void) {{ /* v{i} */ }}")
        response = http.post("/v1/attempts", json=attempt, headers=bearer(keys.writer))
        assert response.status_code == 201, response.text


@pytest.mark.neo4j
def test_delete_namespace_over_http_admin_only_with_a_dry_run(
    http: httpx.Client, store: GraphStore, namespace: str
) -> None:
    doomed = make_keys(store, namespace)
    survivor = make_keys(store, f"{namespace}-other")
    _fill(http, doomed)
    _fill(http, survivor, attempts=1)
    operator = create_key(store, Role.ADMIN, f"{namespace}-ops", "operator").key
    path = f"/v1/namespaces/{namespace}"

    assert http.delete(path, headers=bearer(doomed.writer)).status_code == 403
    assert http.delete(path, params={"dry_run": "true"}, headers=bearer(survivor.admin)).status_code == 200
    own = http.delete(path, headers=bearer(doomed.admin))
    assert own.status_code == 409 and own.json()["error"]["field"] == "namespace"

    before = namespaces.contents(store, namespace)
    dry = http.delete(path, params={"dry_run": "true"}, headers=bearer(operator))
    assert dry.status_code == 200, dry.text
    body = dry.json()
    assert body["dry_run"] is True and body["deleted"] is False
    assert body["nodes"]["Attempt"] == 3 and body["nodes"]["HardwareTarget"] == 1
    assert body["api_keys"] == 3 and body["relationships"] > 0
    assert namespaces.contents(store, namespace) == before  # a dry run deletes nothing

    gone = http.delete(path, headers=bearer(operator))
    assert gone.status_code == 200, gone.text
    assert gone.json()["deleted"] is True and gone.json()["nodes"] == body["nodes"]
    assert namespaces.contents(store, namespace).total_nodes == 0
    assert http.get("/v1/targets", headers=bearer(doomed.reader)).status_code == 401  # its keys went too
    other = http.get("/v1/targets", headers=bearer(survivor.reader))
    assert other.status_code == 200 and len(other.json()["targets"]) == 1  # another team is untouched
    again = http.delete(path, headers=bearer(operator))
    assert again.status_code == 200 and again.json()["deleted"] is False and again.json()["nodes"] == {}
    assert http.delete("/v1/namespaces/Not_Valid", headers=bearer(operator)).status_code == 422


@pytest.mark.neo4j
def test_delete_namespace_from_the_cli(
    monkeypatch: pytest.MonkeyPatch, neo4j_settings: Settings, http: httpx.Client, store: GraphStore,
    namespace: str, tmp_path: Path,
) -> None:  # fmt: skip
    monkeypatch.setattr("kernelgraph.core.settings.get_settings", lambda: neo4j_settings)
    _fill(http, make_keys(store, namespace), attempts=2)
    runner = CliRunner()
    dry = runner.invoke(cli_app, ["namespaces", "delete", namespace, "--dry-run"])
    assert dry.exit_code == 0, dry.output
    assert "would delete" in dry.output and "Attempt" in dry.output
    assert namespaces.contents(store, namespace).nodes["Attempt"] == 2
    refused = runner.invoke(cli_app, ["namespaces", "delete", namespace], input="n\n")
    assert refused.exit_code == 1 and namespaces.contents(store, namespace).total_nodes > 0
    done = runner.invoke(cli_app, ["namespaces", "delete", namespace, "--yes"])
    assert done.exit_code == 0, done.output
    assert "deleted namespace" in done.output
    assert namespaces.contents(store, namespace).total_nodes == 0
    bad = runner.invoke(cli_app, ["namespaces", "delete", "Bad Name", "--dry-run"])
    assert bad.exit_code == 2 and "namespace" in bad.output
