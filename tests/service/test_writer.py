"""Group commit (service/writer.py): concurrent callers share transactions, each is answered only after
its transaction committed, one bad request does not fail the others, and transient failures stay 503."""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
from neo4j.exceptions import Neo4jError

from kernelgraph.core.errors import InvalidInput, Retryable
from kernelgraph.service.knowledge import KnowledgeService
from kernelgraph.service.store import GraphStore, mapped_errors
from kernelgraph.service.writer import GroupCommitWriter, WriteJob
from tests import factories


class FakeStore:
    """Commits after `delay` seconds; rows marked bad make the whole transaction fail."""

    def __init__(self, delay: float = 0.02, error: Exception | None = None) -> None:
        self.delay = delay
        self.error = error
        self.committed: dict[str, float] = {}  # row key -> commit time
        self.groups: list[int] = []
        self.lock = threading.Lock()

    def write(self, jobs: Sequence[WriteJob]) -> list[dict[str, bool]]:
        time.sleep(self.delay)
        if self.error is not None:
            raise self.error
        if any(row.get("bad") for job in jobs for row in job.rows):
            raise InvalidInput("Neo4j rejected a value", field="speedup")
        with self.lock:
            self.groups.append(len(jobs))
            now = time.monotonic()
            for job in jobs:
                for row in job.rows:
                    self.committed[row["key"]] = now
        return [{row["key"]: True for row in job.rows} for job in jobs]


def _submit_all(writer: GroupCommitWriter, jobs: list[list[dict[str, Any]]]) -> list[Any]:
    def one(rows: list[dict[str, Any]]) -> Any:
        try:
            result = writer.submit("ns", rows)
            return result, time.monotonic()
        except Exception as exc:
            return exc

    with ThreadPoolExecutor(len(jobs)) as pool:
        return list(pool.map(one, jobs))


def test_concurrent_callers_share_transactions_and_are_answered_after_their_commit() -> None:
    store = FakeStore()
    writer = GroupCommitWriter(store.write)
    answers = _submit_all(writer, [[{"key": f"k{i}"}] for i in range(32)])
    assert all(answer[0] == {f"k{i}": True} for i, answer in enumerate(answers))
    for i, (_, answered_at) in enumerate(answers):
        assert answered_at >= store.committed[f"k{i}"]
    assert sum(store.groups) == 32
    assert len(store.groups) < 32, "callers that arrived during a commit must share the next one"
    assert writer.transactions == len(store.groups)


def test_a_group_never_exceeds_max_rows_but_takes_a_larger_request_alone() -> None:
    store = FakeStore()
    writer = GroupCommitWriter(store.write, max_rows=3)
    answers = _submit_all(
        writer,
        [[{"key": f"a{i}"}, {"key": f"b{i}"}] for i in range(8)] + [[{"key": f"c{j}"} for j in range(5)]],
    )
    assert all(isinstance(answer, tuple) for answer in answers)
    assert len(store.committed) == 21
    assert max(store.groups) <= 2


def test_one_bad_request_fails_alone() -> None:
    store = FakeStore()
    writer = GroupCommitWriter(store.write)
    jobs = [[{"key": f"k{i}", "bad": i == 5}] for i in range(16)]
    answers = _submit_all(writer, jobs)
    assert isinstance(answers[5], InvalidInput)
    assert all(isinstance(a, tuple) for i, a in enumerate(answers) if i != 5)
    assert set(store.committed) == {f"k{i}" for i in range(16) if i != 5}


def test_transient_failure_reaches_every_caller_as_retryable() -> None:
    writer = GroupCommitWriter(FakeStore(error=Retryable("Neo4j is unreachable")).write)
    answers = _submit_all(writer, [[{"key": f"k{i}"}] for i in range(8)])
    assert all(isinstance(a, Retryable) for a in answers)


def test_a_deadlock_found_at_commit_is_retryable_not_a_500() -> None:
    """What escaped as a 500 under 64 concurrent writers: a relationship-group deadlock at commit time."""
    error = Neo4jError._hydrate_neo4j(
        code="Neo.DatabaseError.Transaction.TransactionCommitFailed",
        message="ForsetiClient can't acquire ExclusiveLock{RELATIONSHIP_GROUP(42)}: deadlock",
    )
    with pytest.raises(Retryable), mapped_errors():
        raise error


class _Session:
    def __init__(self, failures: list[Exception]) -> None:
        self.failures = failures

    def __enter__(self) -> _Session:
        return self

    def __exit__(self, *exc: object) -> None:
        return None

    def execute_write(self, work: Any) -> Any:
        if self.failures:
            raise self.failures.pop(0)
        return work(None)

    def last_bookmarks(self) -> list[str]:
        return ["FB:committed"]


class _Driver:
    def __init__(self, failures: list[Exception]) -> None:
        self.failures = failures
        self.sessions = 0

    def session(self, database: str) -> _Session:
        self.sessions += 1
        return _Session(self.failures)


def _commit_failed() -> Exception:
    return Neo4jError._hydrate_neo4j(
        code="Neo.DatabaseError.Transaction.TransactionCommitFailed", message="deadlock at commit"
    )


def test_write_transaction_retries_a_failed_commit() -> None:
    driver = _Driver([_commit_failed(), _commit_failed()])
    store = GraphStore(driver, "neo4j")  # type: ignore[arg-type]
    assert store.write_transaction(lambda tx: "done") == "done"
    assert driver.sessions == 3


def test_write_transaction_gives_up_with_retryable(monkeypatch: pytest.MonkeyPatch) -> None:
    import kernelgraph.service.store as store_module

    monkeypatch.setattr(store_module, "WRITE_RETRY_SECONDS", 0.3)
    driver = _Driver([_commit_failed() for _ in range(1000)])
    store = GraphStore(driver, "neo4j")  # type: ignore[arg-type]
    with pytest.raises(Retryable):
        store.write_transaction(lambda tx: "done")
    assert driver.sessions > 1


@pytest.mark.neo4j
def test_single_attempts_from_many_threads_share_transactions_and_all_are_stored(
    store: GraphStore, namespace: str
) -> None:
    knowledge = KnowledgeService(store)
    knowledge.upsert_targets(namespace, [factories.target()])
    attempts = [
        factories.attempt(f"many:{i}", parent_source=f"void kernel(void) {{ /* state {i % 5} */ }}",
                          child_source=f"void kernel(void) {{ /* child {i} */ }}")
        for i in range(48)
    ] + [factories.attempt("many:0")]  # fmt: skip
    attempts[-1]["child"]["source"] = attempts[0]["child"]["source"]
    attempts[-1]["parent"]["source"] = attempts[0]["parent"]["source"]
    with ThreadPoolExecutor(16) as pool:
        results = list(pool.map(lambda a: knowledge.record_attempts(namespace, [a])[0], attempts))
    assert sum(r.created for r in results) == 48, "the duplicate key is stored once"
    assert knowledge.writer.transactions < 49
    stored = store.driver.execute_query(
        "MATCH (a:Attempt {namespace: $ns}) RETURN count(a) AS n", ns=namespace, database_=store.database
    ).records[0]["n"]
    assert stored == 48
    from tests.service.test_state_evidence import assert_consistent

    assert sum(row["attempts"] for row in assert_consistent(store, namespace)) == 48


@pytest.mark.neo4j
def test_a_write_whose_retries_ran_out_is_a_503_with_retry_after(
    live_url: str, store: GraphStore, namespace: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """POST /v1/attempts while every commit fails on a deadlock: 503 with Retry-After, never 500."""
    import httpx

    import kernelgraph.service.store as store_module
    from tests.service.conftest import make_keys

    keys = make_keys(store, namespace)
    KnowledgeService(store).upsert_targets(namespace, [factories.target()])

    def deadlocked(self: GraphStore, work: Any, **options: Any) -> Any:
        with mapped_errors():
            raise _commit_failed()

    monkeypatch.setattr(store_module.GraphStore, "write_transaction", deadlocked)
    with httpx.Client(
        base_url=live_url, headers={"Authorization": f"Bearer {keys.writer}"}, timeout=30
    ) as http:
        response = http.post("/v1/attempts", json=factories.attempt("deadlock:0"))
    assert response.status_code == 503, response.text
    assert response.json()["error"]["code"] == "unavailable"
    assert int(response.headers["Retry-After"]) >= 1


@pytest.mark.neo4j
def test_a_bad_parent_reference_in_a_shared_transaction_fails_alone(
    store: GraphStore, namespace: str
) -> None:
    """Parents named by measurement id are looked up once per shared transaction: in a group where one
    request names a measurement that does not exist, that request gets NotFound and nothing of it is
    stored, while the others, parent references included, are stored."""
    from kernelgraph.core.errors import NotFound
    from tests.service.test_store import _by_reference

    knowledge = KnowledgeService(store)
    knowledge.writer = GroupCommitWriter(knowledge._write_attempt_jobs, slots=1)  # one transaction at a time
    knowledge.upsert_targets(namespace, [factories.target()])
    parent = knowledge.record_attempts(namespace, [factories.attempt("group:0")])[0].parent_measurement_id
    assert parent is not None
    requests = {
        "first": factories.attempt("group:1", child_source="/* 1 */"),
        "good reference": _by_reference(factories.attempt("group:2", child_source="/* 2 */"), parent),
        "bad reference": _by_reference(factories.attempt("group:3", child_source="/* 3 */"), "f" * 32),
    }
    answers: dict[str, Any] = {}

    def send(name: str) -> None:
        try:
            answers[name] = knowledge.record_attempts(namespace, [requests[name]])[0]
        except NotFound as exc:
            answers[name] = exc

    with store.driver.session(database=store.database) as session:
        holder = session.begin_transaction(timeout=20)
        # Hold the target's lock: the first request's transaction waits on it, the other two queue.
        holder.run("MATCH (h:HardwareTarget {namespace: $ns}) SET h.held = true", ns=namespace).consume()
        first = threading.Thread(target=send, args=("first",))
        first.start()
        _wait_until(lambda: knowledge.writer._free == 0, "the first request holds the one commit slot")
        others = [threading.Thread(target=send, args=(name,)) for name in ("good reference", "bad reference")]
        for thread in others:
            thread.start()
        _wait_until(lambda: len(knowledge.writer._pending) == 2, "both later requests are queued")
        holder.rollback()
    for thread in [first, *others]:
        thread.join(timeout=30)
    transactions, jobs = knowledge.writer.transactions, knowledge.writer.jobs
    # group:0, then group:1 alone, then the two queued ones together; the bad reference stored nothing
    # and is not counted among the requests the transactions stored (/metrics' group size).
    assert (transactions, jobs) == (3, 3)
    assert answers["first"].created and answers["good reference"].created
    assert answers["good reference"].parent_measurement_id == parent
    assert isinstance(answers["bad reference"], NotFound)
    assert answers["bad reference"].field == "parent_measurement_id"
    stored = store.driver.execute_query(
        "MATCH (a:Attempt {namespace: $ns}) RETURN collect(a.attempt_key) AS keys", ns=namespace,
        database_=store.database,
    ).records[0]["keys"]  # fmt: skip
    assert sorted(stored) == ["group:0", "group:1", "group:2"]


def _wait_until(condition: Any, what: str, seconds: float = 15.0) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, f"not within {seconds:g} s: {what}"
        time.sleep(0.01)


@pytest.mark.neo4j
def test_a_retried_transaction_resolves_parent_references_again_the_same_way(
    store: GraphStore, namespace: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The driver reruns a transaction that hit a deadlock; the rerun resolves each parent named by
    measurement id as the first run did (it once took the parent the first run had filled in for one
    recorded in the same batch, and answered 500 under 64 agents)."""
    from kernelgraph.core.models import KernelVariant, Measurement, validate
    from tests.service.test_store import _by_reference

    knowledge = KnowledgeService(store)
    knowledge.upsert_targets(namespace, [factories.target()])
    stored_parent = knowledge.record_attempts(namespace, [factories.attempt("retry:0")])[
        0
    ].parent_measurement_id
    assert stored_parent is not None
    in_full = factories.attempt("retry:1", parent_source="/* recorded in full */", child_source="/* 1 */")
    in_batch_parent = knowledge._measurement_row(
        validate(Measurement, in_full["parent_measurement"]), validate(KernelVariant, in_full["parent"]),
        factories.target(),
    )["measurement_id"]  # fmt: skip
    batch = [
        in_full,
        _by_reference(factories.attempt("retry:2", child_source="/* 2 */"), stored_parent),
        _by_reference(factories.attempt("retry:3", parent_source="/* recorded in full */", child_source="/* 3 */"),
                      in_batch_parent),
    ]  # fmt: skip
    run_in = store.run_in
    failures = []

    def deadlock_once(tx, name, /, **params):  # type: ignore[no-untyped-def]
        if name == "record_attempts" and not failures:
            failures.append(name)
            raise Neo4jError._hydrate_neo4j(
                code="Neo.TransientError.Transaction.DeadlockDetected", message="test"
            )
        return run_in(tx, name, **params)

    monkeypatch.setattr(store, "run_in", deadlock_once)
    results = knowledge.record_attempts(namespace, batch)
    assert failures == ["record_attempts"], "the transaction ran twice"
    assert [r.created for r in results] == [True, True, True]
    assert results[1].parent_measurement_id == stored_parent
    assert results[2].parent_measurement_id == results[0].parent_measurement_id == in_batch_parent
