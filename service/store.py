"""GraphStore: owns the process's one Neo4j driver and runs the named queries of cypher/.

Reads go through `execute_query(..., routing_=READ)` so that routing URIs send them to readers;
writes run in one managed transaction whose function is idempotent, because the driver retries it.
Neo4j errors are mapped to the service's errors by type and code, never by message text.
"""

from __future__ import annotations

import logging
import random
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, Protocol, TypeVar

import neo4j
from neo4j import Driver, GraphDatabase, ManagedTransaction, RoutingControl
from neo4j.exceptions import (
    AuthError,
    ClientError,
    ConstraintError,
    DriverError,
    Neo4jError,
    ServiceUnavailable,
    SessionExpired,
    TransientError,
)

from kernelgraph.core.errors import Conflict, InvalidInput, KernelGraphError, Retryable, Unauthorized
from kernelgraph.core.settings import Settings
from kernelgraph.service.queries import NamedQuery, registry

log = logging.getLogger(__name__)
T = TypeVar("T")

# The driver reports these transient server codes (Neo.TransientError.Transaction.*) as client errors,
# so it does not retry them; a transaction that the deadlock detector or a lock timeout ended is one.
# The caller may retry the whole request (writes are idempotent): 503, never 500.
TERMINATED_TRANSACTION_CODES = frozenset(
    {
        "Neo.ClientError.Transaction.Terminated",
        "Neo.ClientError.Transaction.LockClientStopped",
        # Ended by its timeout (REQUEST_WRITE_TIMEOUT_S): most often a wait for another transaction's lock.
        "Neo.ClientError.Transaction.TransactionTimedOut",
        "Neo.ClientError.Transaction.TransactionTimedOutClientConfiguration",
    }
)
# A deadlock found while committing (dense nodes take their relationship-group locks at commit) comes
# back as this DatabaseError, which the driver does not retry: it escaped as a 500 under 64 concurrent
# writers. The transaction was rolled back whole and every write function here is idempotent, so
# write_transaction retries it like a transient error, and it is a 503 once the retries run out.
COMMIT_FAILED_CODES = frozenset({"Neo.DatabaseError.Transaction.TransactionCommitFailed"})
# How long the driver retries a transaction that failed transiently (Neo4j unreachable, a leader
# change, a deadlock): a service should answer 503 within seconds when Neo4j is down, not after the
# driver's default 30 s. An outage shorter than this is invisible to callers.
DRIVER_RETRY_SECONDS = 10.0
WRITE_RETRY_SECONDS = 10.0  # how long write_transaction retries a failed commit (as the driver does)
# The longest one try of a request's write transaction may run, lock waits included, before Neo4j ends
# it and the caller gets a 503 to retry: Neo4j's own default is no limit, and under 64 concurrent
# writers one request once went unanswered for over 2 minutes. A full group (2,000 attempts) commits
# in about 2 s on 2 cores; consolidation and migrations, which run longer, set no timeout.
REQUEST_WRITE_TIMEOUT_S = 30.0


class UnconfirmedCommit(Retryable):
    """A COMMIT answered SUCCESS without a bookmark: Neo4j 5.26 answers so when the connection is
    killed with the transaction open (`dbms.killConnections`, a server shutting it), and nothing was
    committed. The driver takes it for a commit; write_transaction retries the (idempotent) work."""


def open_driver(settings: Settings) -> Driver:
    """The process's driver; the caller owns it and closes it at shutdown."""
    return GraphDatabase.driver(
        settings.effective_neo4j_uri,
        auth=(settings.neo4j_user, settings.effective_neo4j_password()),
        max_connection_pool_size=64,
        connection_acquisition_timeout=30.0,
        connection_timeout=5.0,
        max_transaction_retry_time=DRIVER_RETRY_SECONDS,
        # "label does not exist" and similar hints are noise for a schema that fills up over time.
        notifications_min_severity="OFF",
    )


@contextmanager
def mapped_errors() -> Iterator[None]:
    """Translate driver errors into KernelGraphError subclasses (by type and Neo4j code)."""
    try:
        yield
    except KernelGraphError:
        raise
    except ConstraintError as exc:
        raise Conflict(f"constraint violated: {exc.message}") from exc
    except AuthError as exc:
        raise Unauthorized(f"Neo4j rejected the credentials: {exc.message}") from exc
    except (ServiceUnavailable, SessionExpired, TransientError) as exc:
        raise Retryable(f"Neo4j is unreachable or busy: {exc}") from exc
    except ClientError as exc:
        if exc.code in ("Neo.ClientError.Statement.ArgumentError", "Neo.ClientError.Statement.TypeError"):
            raise InvalidInput(f"Neo4j rejected a value: {exc.message}") from exc
        if exc.code in TERMINATED_TRANSACTION_CODES:
            raise Retryable(f"Neo4j ended the transaction under lock contention: {exc}") from exc
        raise
    except (Neo4jError, DriverError) as exc:
        if isinstance(exc, Neo4jError) and exc.code in COMMIT_FAILED_CODES:
            raise Retryable(f"Neo4j could not commit the transaction (rolled back): {exc}") from exc
        if exc.is_retryable() or (isinstance(exc.__cause__, Neo4jError) and exc.__cause__.is_retryable()):
            raise Retryable(f"transient Neo4j failure: {exc}") from exc
        raise


def _row(record: neo4j.Record) -> dict[str, Any]:
    """A record of a named query as a dict. Named queries return maps, lists and scalars only (the
    Browser's *_graph files, which return paths, are run by the Browser, not here), so the values are
    taken as they are: Record.data() would walk every nested value looking for nodes to convert, 1.3 ms
    of a 10 ms retrieval (docs/scaling.md)."""
    return dict(record.items())


class Reader(Protocol):
    """Runs named read queries: the store itself (a transaction each) or one read transaction."""

    def read(self, name: str, /, **params: Any) -> list[dict[str, Any]]: ...


class TransactionReader:
    """Named read queries inside one transaction of GraphStore.read_transaction."""

    def __init__(self, store: GraphStore, tx: ManagedTransaction) -> None:
        self._store = store
        self._tx = tx

    def read(self, name: str, /, **params: Any) -> list[dict[str, Any]]:
        return self._store.run_in(self._tx, name, **params)


class GraphStore:
    def __init__(self, driver: Driver, database: str) -> None:
        self.driver = driver
        self.database = database
        self.queries = registry()

    def _query(self, name: str, params: dict[str, Any]) -> NamedQuery:
        query = self.queries[name]
        query.check(params)
        return query

    def read(self, name: str, /, **params: Any) -> list[dict[str, Any]]:
        """Run a named read query; rows as dicts."""
        query = self._query(name, params)
        with mapped_errors():
            records, _, _ = self.driver.execute_query(
                query.cypher, params, database_=self.database, routing_=RoutingControl.READ
            )
        return [_row(record) for record in records]

    def read_transaction(self, work: Callable[[Reader], T]) -> T:
        """Run `work`'s named read queries in one read transaction: one BEGIN and COMMIT for all of them
        instead of one pair per query (a retrieval's three queries took three). `work` may be retried."""

        def run(tx: ManagedTransaction) -> T:
            return work(TransactionReader(self, tx))

        with (
            mapped_errors(),
            self.driver.session(database=self.database, default_access_mode=neo4j.READ_ACCESS) as session,
        ):
            return session.execute_read(run)

    def write(self, name: str, /, *, timeout_s: float | None = None, **params: Any) -> list[dict[str, Any]]:
        """Run a named write query in one managed (retried) transaction (`timeout_s`: as write_transaction)."""
        query = self._query(name, params)

        def work(tx: ManagedTransaction) -> list[dict[str, Any]]:
            return [_row(record) for record in tx.run(query.cypher, params)]

        return self.write_transaction(work, timeout_s=timeout_s)

    def write_transaction(
        self, work: Callable[[ManagedTransaction], T], *, timeout_s: float | None = None
    ) -> T:
        """Run `work` in one write transaction; it must be idempotent (the driver may retry it).

        The driver retries transient errors; a commit that failed on a deadlock is retried here too,
        with backoff, for up to WRITE_RETRY_SECONDS; then Retryable (503 with Retry-After). With
        `timeout_s`, Neo4j ends a try that runs longer (waiting for a lock, say): Retryable at once.
        """
        if timeout_s is not None:
            work = neo4j.unit_of_work(timeout=timeout_s)(work)
        deadline = time.monotonic() + WRITE_RETRY_SECONDS
        delay = 0.05
        while True:
            try:
                with mapped_errors(), self.driver.session(database=self.database) as session:
                    result = session.execute_write(work)
                    if not session.last_bookmarks():
                        raise UnconfirmedCommit(
                            "Neo4j answered the commit without a bookmark (its connection was being "
                            "closed): the transaction did not commit"
                        )
                    return result
            except Retryable as exc:
                cause = exc.__cause__
                failed_commit = isinstance(cause, Neo4jError) and cause.code in COMMIT_FAILED_CODES
                if not (failed_commit or isinstance(exc, UnconfirmedCommit)):
                    raise
                if time.monotonic() + delay > deadline:
                    raise
                log.info("commit failed (%s); retrying in %.2f s", exc.message, delay)
                time.sleep(delay * (0.5 + random.random()))
                delay = min(delay * 2, 1.0)

    def run_in(self, tx: ManagedTransaction, name: str, /, **params: Any) -> list[dict[str, Any]]:
        """Run a named query inside a transaction function."""
        query = self._query(name, params)
        return [_row(record) for record in tx.run(query.cypher, params)]

    def ping(self) -> bool:
        try:
            with mapped_errors():
                self.driver.verify_connectivity()
            return True
        except Retryable:
            return False

    def run_text(
        self, text: str, params: dict[str, Any], *, write: bool
    ) -> tuple[list[str], list[dict[str, Any]]]:
        """Run one user-given statement (the `kernelgraph cypher` command); keys and rows."""
        routing = RoutingControl.WRITE if write else RoutingControl.READ
        with mapped_errors():
            records, _, keys = self.driver.execute_query(
                neo4j.Query(text),  # user text by design: the cypher command
                params,
                database_=self.database,
                routing_=routing,
            )
        return list(keys), [dict(record.items()) for record in records]
