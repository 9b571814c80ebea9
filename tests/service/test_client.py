"""The agent's clients: HTTP (against the live app) and in-process behave alike; retries are bounded."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from kernelgraph.client import ExperienceClient, KernelGraphClient, connect
from kernelgraph.core.errors import Forbidden, InvalidInput, NotFound, Retryable, Unauthorized
from kernelgraph.core.models import (
    MAX_BATCH,
    AttemptRecord,
    LineageStep,
    RecordResult,
    RetrieveResponse,
    TransferResponse,
)
from kernelgraph.core.settings import Settings
from kernelgraph.core.signature import SIGNATURE_DIM
from kernelgraph.service.inprocess import InProcessClient
from kernelgraph.service.knowledge import KnowledgeService
from kernelgraph.service.store import GraphStore
from tests import factories
from tests.service.conftest import Keys

pytestmark = pytest.mark.neo4j


@pytest.fixture(params=["http", "in-process"])
def experience(request: pytest.FixtureRequest, store: GraphStore, keys: Keys) -> Iterator[ExperienceClient]:
    if request.param == "http":
        client: ExperienceClient = KernelGraphClient(
            request.getfixturevalue("live_url"), keys.writer, timeout=30
        )
    else:
        client = InProcessClient(KnowledgeService(store), keys.namespace)
    yield client
    client.close()


def test_both_clients_record_retrieve_and_trace_lineage(experience: ExperienceClient) -> None:
    assert isinstance(experience, ExperienceClient)
    assert experience.upsert_targets([factories.target("cpu-a"), factories.target("cpu-b")]) == [
        "cpu-a",
        "cpu-b",
    ]
    signature = [0.5] * SIGNATURE_DIM
    batch = [factories.attempt(f"c:{i}", target_name="cpu-a", parent_signature=signature,
                               child_source=f"void kernel(void) {{ /* {i} */ }}") for i in range(3)]  # fmt: skip
    results = experience.record_attempts(batch)
    assert all(isinstance(r, RecordResult) and r.created for r in results)
    replay = experience.record_attempt(batch[0])
    assert replay.created is False and replay.child_kernel_id == results[0].child_kernel_id
    found = experience.retrieve({"target": "cpu-a", "signature": signature})
    assert isinstance(found, RetrieveResponse) and found.transforms[0].transform == "unroll"
    steps = experience.lineage(results[1].child_kernel_id)
    assert all(isinstance(s, LineageStep) for s in steps) and steps[1].transform == "unroll"
    assert isinstance(experience.transfer("cpu-a", "cpu-b"), TransferResponse)
    assert {t["name"] for t in experience.list_targets()} == {"cpu-a", "cpu-b"}
    with pytest.raises(InvalidInput) as bad:
        experience.record_attempt({**batch[0], "attempt_key": "c:bad", "speedup": -2.0})
    assert bad.value.field == "speedup"
    with pytest.raises(NotFound):
        experience.lineage("0123abcd")


def test_both_clients_accept_a_parent_named_by_its_measurement_id(experience: ExperienceClient) -> None:
    experience.upsert_targets([factories.target("cpu-a")])
    first = experience.record_attempt(factories.attempt("ref:0", target_name="cpu-a"))
    assert first.parent_measurement_id is not None
    again = factories.attempt("ref:1", target_name="cpu-a", transform="tile",
                              child_source="void kernel(void) { /* tiled */ }")  # fmt: skip
    del again["parent"], again["parent_measurement"]
    model = AttemptRecord.model_validate({**again, "parent_measurement_id": first.parent_measurement_id})
    second = experience.record_attempt(model)
    assert second.created and second.parent_kernel_id == first.parent_kernel_id
    assert second.parent_measurement_id == first.parent_measurement_id
    with pytest.raises(NotFound) as unknown:
        experience.record_attempt(
            model.model_copy(update={"attempt_key": "ref:2", "parent_measurement_id": "f" * 32})
        )
    assert unknown.value.field == "parent_measurement_id"


def test_http_client_raises_the_services_error_classes(live_url: str, keys: Keys) -> None:
    with KernelGraphClient(live_url, "kg_wrong", max_retries=0) as wrong, pytest.raises(Unauthorized):
        wrong.list_targets()
    with KernelGraphClient(live_url, keys.reader) as reader, pytest.raises(Forbidden) as refused:
        reader.upsert_targets([factories.target()])
    assert refused.value.field == "authorization"
    with (
        KernelGraphClient(live_url, keys.writer, namespace="someone-else") as writer,
        pytest.raises(Forbidden),
    ):
        writer.upsert_targets([factories.target()])


class Flaky:
    """A transport that answers 503 (or drops the connection) `failures` times, then succeeds."""

    def __init__(self, failures: int, *, connection_errors: bool = False) -> None:
        self.failures = failures
        self.connection_errors = connection_errors
        self.calls = 0

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.calls += 1
        if self.calls <= self.failures:
            if self.connection_errors:
                raise httpx.ConnectError("refused", request=request)
            return httpx.Response(503, headers={"Retry-After": "3"},
                                  json={"error": {"code": "unavailable", "message": "Neo4j is busy"}})  # fmt: skip
        return httpx.Response(200, json={"targets": [{"name": "cpu-a"}]})


def _client(flaky: Flaky, sleeps: list[float], retries: int = 4) -> KernelGraphClient:
    return KernelGraphClient("http://stub", "kg_key", transport=httpx.MockTransport(flaky), max_retries=retries,
                             backoff_s=0.5, sleep=sleeps.append)  # fmt: skip


def test_client_splits_a_large_write_into_batches_the_service_accepts_and_keeps_the_order() -> None:
    sizes: list[int] = []

    def service(request: httpx.Request) -> httpx.Response:
        sent = json.loads(request.content)["measurements"]
        sizes.append(len(sent))
        return httpx.Response(
            200,
            json={
                "results": [
                    {"key": m["key"], "created": True, "kernel_id": "k", "measurement_id": m["key"]}
                    for m in sent
                ]
            },
        )

    client = KernelGraphClient("http://stub", "kg_key", transport=httpx.MockTransport(service))
    keys = [f"m:{i}" for i in range(2 * MAX_BATCH + 1)]
    results = client.record_measurements([{"key": key} for key in keys])
    assert sizes == [MAX_BATCH, MAX_BATCH, 1]
    assert [r.key for r in results] == keys


def test_client_retries_503_honouring_retry_after_then_succeeds() -> None:
    flaky, sleeps = Flaky(2), []
    assert _client(flaky, sleeps).list_targets() == [{"name": "cpu-a"}]
    assert flaky.calls == 3 and sleeps == [3.0, 3.0]


def test_client_retries_connection_errors_with_exponential_backoff() -> None:
    flaky, sleeps = Flaky(3, connection_errors=True), []
    assert _client(flaky, sleeps).list_targets() == [{"name": "cpu-a"}]
    assert flaky.calls == 4 and len(sleeps) == 3
    assert sleeps[0] <= 0.5 and 0.5 <= sleeps[2] <= 2.0  # 0.5 * 2**attempt, jittered down by at most half


def test_client_gives_up_after_a_bounded_number_of_retries() -> None:
    flaky, sleeps = Flaky(100), []
    with pytest.raises(Retryable) as exc:
        _client(flaky, sleeps, retries=2).list_targets()
    assert exc.value.code == "unavailable" and flaky.calls == 3 and len(sleeps) == 2


def test_client_retries_an_unreachable_service_then_raises_retryable() -> None:
    # No service at all on this port: connection errors, retried, then Retryable.
    sleeps: list[float] = []
    client = KernelGraphClient("http://127.0.0.1:9", "kg_key", max_retries=1, sleep=sleeps.append)
    with pytest.raises(Retryable):
        client.list_targets()
    assert len(sleeps) == 1


def test_connect_picks_http_or_in_process_and_owns_what_it_opened(
    neo4j_settings: Settings, live_url: str, keys: Keys
) -> None:
    remote = connect(Settings(service_url=live_url, api_key=keys.reader, neo4j_password="unused"))
    assert isinstance(remote, KernelGraphClient)
    assert remote.list_targets() == []
    remote.close()
    local_settings: dict[str, Any] = {
        **neo4j_settings.model_dump(),
        "service_url": None,
        "namespace": keys.namespace,
    }
    local = connect(Settings(**local_settings))
    assert isinstance(local, InProcessClient)
    assert local.list_targets() == []
    local.close()
    assert local._owned_driver is None
