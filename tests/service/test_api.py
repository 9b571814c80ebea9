"""The HTTP API over real HTTP (uvicorn in a thread) on the real Neo4j: concurrency, isolation, bad input."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import httpx
import pytest
from neo4j import GraphDatabase

from kernelgraph.core.errors import InvalidInput
from kernelgraph.core.models import MAX_BATCH
from kernelgraph.core.settings import Settings
from kernelgraph.core.signature import SIGNATURE_DIM
from kernelgraph.service import migrate
from kernelgraph.service.api.app import create_app
from kernelgraph.service.knowledge import KnowledgeService
from kernelgraph.service.store import GraphStore
from tests import factories
from tests.service.conftest import Keys, bearer, free_port, make_keys, serve

pytestmark = pytest.mark.neo4j


def counts(store: GraphStore, *namespaces: str) -> tuple[int, int]:
    """Nodes and relationships of these namespaces (API keys included)."""
    nodes = store.driver.execute_query(
        "MATCH (n) WHERE n.namespace IN $ns RETURN count(n) AS c",
        ns=list(namespaces),
        database_=store.database,
    ).records[0]["c"]
    rels = store.driver.execute_query(
        "MATCH (n)-[r]-() WHERE n.namespace IN $ns RETURN count(DISTINCT r) AS c",
        ns=list(namespaces), database_=store.database,
    ).records[0]["c"]  # fmt: skip
    return nodes, rels


def label_counts(store: GraphStore, namespace: str) -> dict[str, int]:
    rows = store.driver.execute_query(
        "MATCH (n {namespace: $ns}) RETURN labels(n)[0] AS label, count(*) AS c", ns=namespace,
        database_=store.database,
    ).records  # fmt: skip
    return {r["label"]: r["c"] for r in rows}


def assert_error(response: httpx.Response, status: int, field: str | None = None) -> dict[str, Any]:
    """The documented error shape: {"error": {"code", "message", "field"?, "details"?}} and nothing else."""
    assert response.status_code == status, response.text
    body = response.json()
    assert set(body) == {"error"}
    error = body["error"]
    assert set(error) <= {"code", "message", "field", "details"}
    assert isinstance(error["code"], str) and error["code"]
    assert isinstance(error["message"], str) and error["message"]
    if field is not None:
        assert error.get("field") == field, error
    return error


def setup_target(http: httpx.Client, key: str, name: str = "cpu-test") -> None:
    response = http.post("/v1/targets", json={"targets": [factories.target(name)]}, headers=bearer(key))
    assert response.status_code == 200, response.text


def test_health_needs_no_key_and_reports_neo4j(http: httpx.Client) -> None:
    response = http.get("/v1/health")
    assert response.status_code == 200
    assert response.json()["neo4j"] == "reachable" and response.json()["schema"] == "up to date"


def test_health_is_503_while_a_migration_is_pending(http: httpx.Client, store: GraphStore) -> None:
    """A replica whose database is behind its code (its queries may name indexes not created yet) is
    kept out of a load balancer's rotation until `kernelgraph schema apply` ran."""
    latest = migrate.status(store)[-1]
    store.driver.execute_query(
        "MATCH (m:SchemaMigration {version: $v}) DELETE m", v=latest.version, database_=store.database
    )
    try:
        response = http.get("/v1/health")
        error = assert_error(response, 503)
        assert error["field"] == "schema" and latest.name in error["message"]
        assert int(response.headers["Retry-After"]) >= 1
    finally:
        assert [m.name for m in migrate.apply(store)] == [
            latest.name
        ]  # idempotent: re-applying changes nothing
    assert http.get("/v1/health").status_code == 200


def test_openapi_documents_every_route(http: httpx.Client) -> None:
    spec = http.get("/openapi.json").json()
    for path in ("/v1/targets", "/v1/attempts", "/v1/attempts/batch", "/v1/retrieve", "/v1/transfer",
                 "/v1/transforms", "/v1/kernels/{kernel_id}/lineage", "/v1/health", "/v1/leaderboard",
                 "/v1/evidence", "/v1/transfer/matrix", "/v1/transfer/predict",
                 "/v1/measurements/batch"):  # fmt: skip
        assert path in spec["paths"]
        for operation in spec["paths"][path].values():
            assert operation.get("description"), f"{path} has no docstring"
    assert http.get("/docs").status_code == 200


def test_error_shape_is_the_same_for_every_kind_of_failure(http: httpx.Client, keys: Keys) -> None:
    error = assert_error(http.get("/v1/targets"), 401, "authorization")
    assert error["code"] == "unauthorized"
    error = assert_error(http.post("/v1/attempts", json={}, headers=bearer(keys.writer)), 422)
    assert error["code"] == "invalid_input" and error["field"] and error["details"]
    assert all(set(d) == {"field", "problem"} for d in error["details"])
    assert assert_error(http.get("/v1/nowhere"), 404)["code"] == "not_found"
    assert (
        assert_error(http.delete("/v1/targets", headers=bearer(keys.admin)), 405)["code"]
        == "method_not_allowed"
    )


def test_record_then_replay_writes_nothing(http: httpx.Client, keys: Keys, store: GraphStore) -> None:
    setup_target(http, keys.writer)
    attempt = factories.attempt("run-1:0")
    for side in (
        "parent_measurement",
        "child_measurement",
    ):  # a retry resends the same payload, time included
        attempt[side]["taken_at"] = "2025-01-01T00:00:00Z"
    first = http.post("/v1/attempts", json=attempt, headers=bearer(keys.writer))
    assert first.status_code == 201 and first.json()["created"] is True
    before = counts(store, keys.namespace)
    again = http.post("/v1/attempts", json=attempt, headers=bearer(keys.writer))
    assert again.status_code == 200
    assert again.json() == {**first.json(), "created": False}
    assert counts(store, keys.namespace) == before
    lineage = http.get(f"/v1/kernels/{first.json()['child_kernel_id']}/lineage", headers=bearer(keys.reader))
    assert lineage.status_code == 200
    steps = lineage.json()["steps"]
    assert [s["transform"] for s in steps] == [None, "unroll"]  # the kernel itself, then its parent
    board = http.get(
        "/v1/leaderboard", params={"pattern": "dense-matmul"}, headers=bearer(keys.reader)
    ).json()
    assert [(r["transform"], r["attempts"], r["kept"]) for r in board["rows"]] == [("unroll", 1, 1)]
    evidence = http.post(
        "/v1/evidence", json={"attempt_keys": ["run-1:0"]}, headers=bearer(keys.reader)
    ).json()
    assert evidence["attempts"][0]["child_kernel_id"] == first.json()["child_kernel_id"]


def test_32_concurrent_writers_store_every_attempt_once_and_replays_change_nothing(
    http: httpx.Client, keys: Keys, store: GraphStore
) -> None:
    setup_target(http, keys.writer)
    writers, per_writer, batch = 32, 100, 25
    # Writers share parents and transforms, so MERGEs on the same nodes race across transactions.
    parents = [f"void kernel(void) {{ /* parent {i} */ }}" for i in range(8)]

    def batches_of(writer: int) -> list[list[dict[str, Any]]]:
        records = [
            factories.attempt(
                f"w{writer}:{i}",
                transform=("unroll", "tile", "vectorize")[i % 3],
                parent_source=parents[i % 8],
                child_source=f"void kernel(void) {{ /* child {(writer * per_writer + i) % 400} */ }}",
            )
            for i in range(per_writer)
        ]
        return [records[i : i + batch] for i in range(0, per_writer, batch)]

    all_batches = [b for w in range(writers) for b in batches_of(w)]

    def post(records: list[dict[str, Any]]) -> dict[str, Any]:
        # As every client does (KernelGraphClient too): a 503 with Retry-After is retried, since a batch
        # is all-or-nothing; anything else, a 500 above all, fails the test at once.
        with httpx.Client(base_url=str(http.base_url), timeout=120) as client:
            for _ in range(6):
                response = client.post(
                    "/v1/attempts/batch", json={"attempts": records}, headers=bearer(keys.writer)
                )
                if response.status_code != 503:
                    break
                time.sleep(min(float(response.headers.get("Retry-After", "1")), 2.0))
        assert response.status_code == 200, response.text
        return response.json()

    with ThreadPoolExecutor(writers) as pool:
        results = list(pool.map(post, all_batches))
    assert sum(r["created"] for r in results) == writers * per_writer
    labels = label_counts(store, keys.namespace)
    assert labels["Attempt"] == writers * per_writer
    assert labels["Kernel"] == 8 + 400
    assert labels["Transform"] == 3
    duplicates = store.driver.execute_query(
        "MATCH (n {namespace: $ns}) WHERE n:Kernel OR n:Measurement OR n:Attempt "
        "WITH labels(n)[0] AS l, coalesce(n.kernel_id, n.measurement_id, n.attempt_key) AS key, count(*) AS c "
        "WHERE c > 1 RETURN count(*) AS dups",
        ns=keys.namespace, database_=store.database,
    ).records[0]["dups"]  # fmt: skip
    assert duplicates == 0
    before = counts(store, keys.namespace)

    with ThreadPoolExecutor(writers) as pool:
        replays = list(pool.map(post, all_batches))
    assert sum(r["created"] for r in replays) == 0
    assert all(not x["created"] for r in replays for x in r["results"])
    assert counts(store, keys.namespace) == before
    assert label_counts(store, keys.namespace) == labels


def test_a_reader_of_one_namespace_never_sees_another(
    http: httpx.Client, store: GraphStore, keys: Keys, namespace: str
) -> None:
    other = make_keys(store, f"{namespace}-b")
    setup_target(http, keys.writer, "cpu-a")
    setup_target(http, other.writer, "cpu-b")
    setup_target(http, other.writer, "cpu-b2")
    signature = [0.5] * SIGNATURE_DIM
    mine = factories.attempt("a:0", transform="tile", target_name="cpu-a", parent_signature=signature)
    theirs = factories.attempt("b:0", transform="secret-transform", target_name="cpu-b", parent_signature=signature,
                               parent_source="void kernel(void) { /* b */ }",
                               child_source="void kernel(void) { /* b child */ }")  # fmt: skip
    theirs2 = {**theirs, "attempt_key": "b:1", "target": "cpu-b2"}
    assert http.post("/v1/attempts", json=mine, headers=bearer(keys.writer)).status_code == 201
    b_child = http.post("/v1/attempts", json=theirs, headers=bearer(other.writer)).json()["child_kernel_id"]
    assert http.post("/v1/attempts", json=theirs2, headers=bearer(other.writer)).status_code == 201
    reader = bearer(keys.reader)

    targets = http.get("/v1/targets", headers=reader).json()["targets"]
    assert {t["name"] for t in targets} == {"cpu-a"}
    assert {t["namespace"] for t in targets} == {keys.namespace}
    transforms = http.get("/v1/transforms", headers=reader).json()["transforms"]
    assert "secret-transform" not in json.dumps(transforms)
    found = http.post("/v1/retrieve", json={"target": "cpu-a", "signature": signature}, headers=reader)
    assert found.status_code == 200, found.text
    assert "secret-transform" not in found.text and "b:0" not in found.text
    assert {t["transform"] for t in found.json()["transforms"]} == {"tile"}
    assert_error(http.post("/v1/retrieve", json={"target": "cpu-b", "signature": signature}, headers=reader), 404,
                 "target")  # fmt: skip
    assert_error(http.post("/v1/transfer", json={"source_target": "cpu-b", "destination_target": "cpu-b2"},
                           headers=reader), 404)  # fmt: skip
    assert_error(http.get(f"/v1/kernels/{b_child}/lineage", headers=reader), 404, "kernel_id")
    assert "secret-transform" not in http.get("/v1/leaderboard", headers=reader).text
    assert http.post("/v1/evidence", json={"attempt_keys": ["b:0", "b:1"]}, headers=reader).json() == {
        "attempts": []
    }
    # Naming the other namespace is refused outright, by query parameter or header.
    for params, headers in (({"namespace": other.namespace}, reader),
                            ({}, {**reader, "X-KernelGraph-Namespace": other.namespace})):  # fmt: skip
        for response in (
            http.get("/v1/targets", params=params, headers=headers),
            http.get("/v1/transforms", params=params, headers=headers),
            http.get("/v1/leaderboard", params=params, headers=headers),
            http.post("/v1/evidence", params=params, headers=headers, json={"attempt_keys": ["b:0"]}),
            http.get(f"/v1/kernels/{b_child}/lineage", params=params, headers=headers),
            http.post("/v1/retrieve", params=params, headers=headers, json={"target": "cpu-b", "signature": signature}),
            http.post("/v1/transfer", params=params, headers=headers,
                      json={"source_target": "cpu-b", "destination_target": "cpu-b2"}),
        ):  # fmt: skip
            assert_error(response, 403, "namespace")
    # An admin may read across namespaces when it names them.
    admin = http.get("/v1/targets", params={"namespace": f"{keys.namespace},{other.namespace}"},
                     headers=bearer(keys.admin)).json()["targets"]  # fmt: skip
    assert {t["name"] for t in admin} == {"cpu-a", "cpu-b", "cpu-b2"}
    assert http.get(f"/v1/kernels/{b_child}/lineage", params={"namespace": other.namespace},
                    headers=bearer(keys.admin)).status_code == 200  # fmt: skip
    assert http.post("/v1/transfer", params={"namespace": other.namespace}, headers=bearer(keys.admin),
                     json={"source_target": "cpu-b", "destination_target": "cpu-b2"}).status_code == 200  # fmt: skip


def _raw(body: Any) -> str:
    return json.dumps(body)  # allow_nan: float('nan') becomes the literal NaN token


def _attempt(**overrides: Any) -> dict[str, Any]:
    return {**factories.attempt("bad:0"), **overrides}


def _nested(path: str, value: Any) -> dict[str, Any]:
    record = json.loads(json.dumps(factories.attempt("bad:0")))
    node = record
    *parents, leaf = path.split(".")
    for part in parents:
        node = node[part]
    node[leaf] = value
    return record


# name -> (method, path, who, body (json-able or raw str), extra headers, status, field)
BadCase = tuple[str, str, str, Any, dict[str, str], int, str | None]
BAD_INPUTS: dict[str, BadCase] = {
    "nan speedup (literal NaN token)": ("POST", "/v1/attempts", "writer", _raw(_attempt(speedup=float("nan"))), {},
                                        422, "speedup"),
    "nan counter": ("POST", "/v1/attempts", "writer", _raw(_nested("child_measurement.median_ns", float("nan"))), {},
                    422, "child_measurement.median_ns"),
    "wrong signature dimension": ("POST", "/v1/attempts", "writer",
                                  _nested("parent_measurement.signature", [0.5] * (SIGNATURE_DIM + 1)), {}, 422,
                                  "parent_measurement.signature"),
    "unknown target": ("POST", "/v1/attempts", "writer", _attempt(target="no-such-target"), {}, 404, "target"),
    "huge diagnosis": ("POST", "/v1/attempts", "writer", _attempt(diagnosis="x" * 9_000), {}, 422, "diagnosis"),
    "huge source": ("POST", "/v1/attempts", "writer", _nested("child.source", "y" * 200_001), {}, 422,
                    "child.source"),
    "cypher-looking transform": ("POST", "/v1/attempts", "writer",
                                 _nested("transform.name", "x'}) DETACH DELETE n //"), {}, 422, "transform.name"),
    "cypher-looking target name": ("POST", "/v1/targets", "writer",
                                   {"targets": [factories.target("a` MATCH (n) DETACH DELETE n")]}, {}, 422,
                                   "targets[0].name"),
    "negative time": ("POST", "/v1/attempts", "writer", _nested("parent_measurement.median_ns", -5.0), {}, 422,
                      "parent_measurement.median_ns"),
    "missing field": ("POST", "/v1/attempts", "writer", {k: v for k, v in _attempt().items() if k != "outcome"}, {},
                      422, "outcome"),
    "unknown enum": ("POST", "/v1/attempts", "writer", _attempt(outcome="great"), {}, 422, "outcome"),
    "unknown retrieval mode": ("POST", "/v1/retrieve", "reader",
                               {"target": "cpu-test", "mode": "fuzzy", "signature": [0.5] * SIGNATURE_DIM}, {}, 422,
                               "mode"),
    "k out of range": ("POST", "/v1/retrieve", "reader", {"target": "cpu-test", "k": 0,
                                                         "signature": [0.5] * SIGNATURE_DIM}, {}, 422, "k"),
    "invalid json": ("POST", "/v1/attempts", "writer", '{"attempt_key": "x",', {}, 422, "body"),
    "oversized batch": ("POST", "/v1/attempts/batch", "writer",
                        {"attempts": [_attempt(attempt_key=f"b:{i}") for i in range(MAX_BATCH + 1)]}, {}, 413,
                        "attempts"),
    "bad element of a batch": ("POST", "/v1/attempts/batch", "writer",
                               {"attempts": [_attempt(attempt_key="b:0"), _attempt(attempt_key="b:1"),
                                             _attempt(attempt_key="b:2", speedup=-1.0)]}, {}, 422,
                               "attempts[2].speedup"),
    "unknown field": ("POST", "/v1/attempts", "writer", _attempt(drop_table="yes"), {}, 422, "drop_table"),
    "wrong key": ("POST", "/v1/attempts", "wrong", _attempt(), {}, 401, "authorization"),
    "missing key": ("POST", "/v1/attempts", "none", _attempt(), {}, 401, "authorization"),
    "reader writing": ("POST", "/v1/attempts", "reader", _attempt(), {}, 403, "authorization"),
    "writer of A writing to B": ("POST", "/v1/attempts?namespace=someone-else", "writer", _attempt(), {}, 403,
                                 "namespace"),
    "writer of A writing to B by header": ("POST", "/v1/targets", "writer", {"targets": [factories.target("t2")]},
                                           {"X-KernelGraph-Namespace": "someone-else"}, 403, "namespace"),
    "bad namespace name": ("GET", "/v1/targets?namespace=A%27%20OR%201=1", "admin", None, {}, 422, "namespace"),
    "wrong content type": ("POST", "/v1/attempts", "writer", "speedup=2", {"Content-Type": "text/plain"}, 415,
                           "content-type"),
    "injection in kernel id": ("GET", "/v1/kernels/abc'%20OR%201=1/lineage", "reader", None, {}, 422,
                               "kernel_id"),
    "unknown kernel": ("GET", "/v1/kernels/0123abcd/lineage", "reader", None, {}, 404, "kernel_id"),
}  # fmt: skip


@pytest.mark.parametrize("case", list(BAD_INPUTS), ids=list(BAD_INPUTS))
def test_bad_input_gets_the_right_4xx_naming_the_field_and_writes_nothing(
    case: str, http: httpx.Client, keys: Keys, store: GraphStore
) -> None:
    method, path, who, body, extra, status, field = BAD_INPUTS[case]
    setup_target(http, keys.writer)
    assert (
        http.post("/v1/attempts", json=factories.attempt("good:0"), headers=bearer(keys.writer)).status_code
        == 201
    )
    before = counts(store, keys.namespace, "someone-else")
    key = {"reader": keys.reader, "writer": keys.writer, "admin": keys.admin, "wrong": "kg_not-a-key"}.get(
        who
    )
    headers = {**(bearer(key) if key else {}), **extra}
    if isinstance(body, str):
        headers.setdefault("Content-Type", "application/json")
        response = http.request(method, path, content=body.encode(), headers=headers)
    else:
        response = http.request(method, path, json=body, headers=headers)
    assert_error(response, status, field)
    assert counts(store, keys.namespace, "someone-else") == before


def test_a_body_over_the_limit_is_refused_before_it_is_read(live_url: str, keys: Keys) -> None:
    huge = b'{"attempt_key": "' + b"x" * (33 * 1024 * 1024) + b'"}'
    try:
        response = httpx.post(f"{live_url}/v1/attempts", content=huge, timeout=60,
                              headers={**bearer(keys.writer), "Content-Type": "application/json"})  # fmt: skip
    except httpx.TransportError:  # the server may close before the client finished sending: also refused
        return
    assert_error(response, 413, "body")


@pytest.fixture(scope="module")
def unreachable_url(neo4j_settings: Settings) -> Any:
    """An app whose Neo4j is a closed port (a driver that gives up quickly rather than retrying for 30 s)."""
    port = free_port()
    settings = Settings(neo4j_uri=f"bolt://127.0.0.1:{port}", neo4j_password="unused")
    driver = GraphDatabase.driver(settings.effective_neo4j_uri, auth=("neo4j", "unused"),
                                  max_transaction_retry_time=0.2, connection_timeout=1.0)  # fmt: skip
    live = serve(create_app(settings, driver=driver))
    yield live.url
    live.stop()
    driver.close()


@pytest.mark.parametrize(
    "call",
    [lambda c: c.get("/v1/health"), lambda c: c.get("/v1/targets", headers=bearer("kg_any-key"))],
    ids=["health", "authenticated read"],
)
def test_unreachable_neo4j_gives_503_with_retry_after(
    unreachable_url: str, call: Callable[[httpx.Client], httpx.Response]
) -> None:
    with httpx.Client(base_url=unreachable_url, timeout=30) as client:
        response = call(client)
    error = assert_error(response, 503)
    assert error["code"] == "unavailable"
    assert int(response.headers["Retry-After"]) >= 1


def test_keys_create_prints_a_key_once_that_then_authenticates(
    neo4j_settings: Settings, http: httpx.Client, namespace: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from typer.testing import CliRunner

    from kernelgraph.cli import app
    from kernelgraph.core.settings import get_settings

    monkeypatch.setenv("KERNELGRAPH_NEO4J_URI", neo4j_settings.effective_neo4j_uri)
    monkeypatch.setenv("KERNELGRAPH_NEO4J_PASSWORD", neo4j_settings.effective_neo4j_password())
    monkeypatch.setenv("KERNELGRAPH_NEO4J_DATABASE", neo4j_settings.neo4j_database)
    get_settings.cache_clear()
    try:
        created = CliRunner().invoke(app, ["keys", "create", "--role", "reader", "--namespace", namespace,
                                           "--label", "cli test"])  # fmt: skip
        assert created.exit_code == 0, created.output
        key = created.stdout.strip().splitlines()[-1]
        listed = CliRunner().invoke(app, ["keys", "list"])
        assert listed.exit_code == 0 and namespace in listed.stdout and key not in listed.stdout
        bad = CliRunner().invoke(app, ["keys", "create", "--role", "reader", "--namespace", "Not Valid"])
        assert bad.exit_code == 2
    finally:
        get_settings.cache_clear()
    assert http.get("/v1/targets", headers=bearer(key)).json() == {"targets": []}


def test_kernelbench_import_over_http_then_matrix_and_prediction(
    http: httpx.Client, live_url: str, keys: Keys, store: GraphStore
) -> None:
    """The importer through the HTTP client (lone measurements included), then the transfer routes."""
    from pathlib import Path

    from kernelgraph.client import KernelGraphClient
    from kernelgraph.service.importers.kernelbench import import_timings

    fixture = Path(__file__).resolve().parent.parent / "fixtures" / "kernelbench"
    with KernelGraphClient(live_url, keys.writer) as client:
        summary = import_timings(fixture, client)
        assert summary.created == 71 and sum(h.measurements_alone for h in summary.hardware) == 1
        assert import_timings(fixture, client).created == 0
    matrix = http.post("/v1/transfer/matrix", json={"resamples": 50}, headers=bearer(keys.reader))
    assert matrix.status_code == 200, matrix.text
    body = matrix.json()
    assert [t["family"] for t in body["targets"]] == ["Ampere", "Ada", "Hopper"]
    assert len(body["cells"]) == 6 and all(c["pairs"] >= 10 for c in body["cells"])
    target = "A100_modal:A100-SXM4-80GB"
    predicted = http.post("/v1/transfer/predict", json={"target": target}, headers=bearer(keys.reader))
    assert predicted.status_code == 200, predicted.text
    assert {w["target"] for w in predicted.json()["weights"]} == {t["name"] for t in body["targets"]} - {
        target
    }
    assert_error(
        http.post("/v1/transfer/predict", json={"target": "nope"}, headers=bearer(keys.reader)), 404, "target"
    )
    assert_error(
        http.post("/v1/transfer/matrix", json={"resamples": -1}, headers=bearer(keys.reader)),
        422,
        "resamples",
    )
    bad = http.post(
        "/v1/measurements/batch", json={"measurements": [{"key": "x"}]}, headers=bearer(keys.writer)
    )
    assert assert_error(bad, 422)["field"].startswith("measurements[0].")


# What each retrieval mode needs, and the message a caller gets without it: the same over HTTP and
# in-process, worded around the field it names (core/models.py RetrieveRequest, SELF_NAMING_ERRORS).
MODE_NEEDS = {
    "counters without a state": ({}, "signature", "counters mode needs `signature`, or `counters` with `counter_source`"),
    "text without source": ({"mode": "text"}, "source", "text mode needs the kernel's `source`"),
    "label without tasks": ({"mode": "label"}, "tasks", "label mode needs `tasks`, the task labels to retrieve"),
    "raw counters without source": ({"mode": "global", "counters": {"Ir": 1.0}}, "counter_source",
                                    "`counter_source` is required with raw `counters`"),
}  # fmt: skip


@pytest.mark.parametrize("case", list(MODE_NEEDS), ids=list(MODE_NEEDS))
def test_a_retrieval_missing_what_its_mode_needs_names_the_field_in_one_message(
    case: str, http: httpx.Client, keys: Keys, store: GraphStore
) -> None:
    extra, field, message = MODE_NEEDS[case]
    setup_target(http, keys.writer)
    response = http.post("/v1/retrieve", json={"target": "cpu-test", **extra}, headers=bearer(keys.reader))
    assert_error(response, 422, field)
    assert response.json()["error"]["message"] == message
    with pytest.raises(InvalidInput) as error:
        KnowledgeService(store).retrieve([keys.namespace], {"target": "cpu-test", **extra})
    assert (error.value.field, error.value.message) == (field, message)
