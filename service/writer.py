"""Group commit: concurrent record calls share one write transaction.

Every attempt recorded on its own (`POST /v1/attempts`, one per agent step) used to be its own
transaction: its own round trips, its own commit (a log flush) and its own locks on the shared
kernels, states and target nodes. With many agents those transactions queued behind each other on
the same locks and throughput did not grow with concurrency. Here a caller queues its rows and then
either waits or, when a commit slot is free, becomes the leader: it takes everything queued (up to
`max_rows`) and writes it in one transaction. Every caller is answered only after the transaction
that holds its rows committed (nothing acknowledged can be lost), or gets that transaction's error.

No thread of its own: the callers' threads do the work, so there is nothing to start or stop. A
batch whose transaction fails for a reason other than a transient one (a value Neo4j rejects) is
retried one caller at a time, so one bad request cannot fail the others.

A job may name stored records that its rows depend on (`references`: an attempt's parent named by
measurement id). The group's write looks them up once for the whole group, inside its transaction,
instead of one query per request before it; `resolve` then completes the job's rows from what was
found, or raises for that job alone (its caller gets the error, the others are written).
"""

from __future__ import annotations

import logging
import threading
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from kernelgraph.core.errors import Retryable

log = logging.getLogger(__name__)

MAX_GROUP_ROWS = 2_000  # attempts per shared transaction (one full batch of 1,000 always fits)
# Transactions of one writer in flight at once. Two keep both cores busy (one transaction's query
# runs while the other commits or the callers validate): 1,000-attempt batches from 2 threads went
# 15-25% faster than with one, in 2 of 3 interleaved rounds on the 2-core machine. Their rare
# deadlocks on shared kernels and states are retried (GraphStore.write_transaction).
COMMIT_SLOTS = 2


@dataclass(eq=False)
class WriteJob:
    """One caller's rows for one namespace; `result` maps each row key to whether it was created."""

    namespace: str
    rows: list[dict[str, Any]]
    references: frozenset[str] = frozenset()
    resolve: Callable[[Mapping[str, dict[str, Any]]], None] | None = None
    result: dict[str, bool] = field(default_factory=dict)
    error: BaseException | None = None
    done: bool = False
    # Wakes this job's caller: its transaction ended, or a commit slot is free and the job is the
    # oldest queued. One event per caller, so a commit wakes only the callers it concerns (a shared
    # condition woke all forty of the service's threads on every commit).
    signal: threading.Event = field(default_factory=threading.Event)


# Writes the rows of several jobs in one transaction; returns each job's result, in order, or the
# error that failed that job alone (its references did not resolve).
GroupWrite = Callable[[Sequence[WriteJob]], list[dict[str, bool] | Exception]]


class GroupCommitWriter:
    """Gathers the rows of concurrent callers into shared transactions (leader/follower group commit)."""

    def __init__(
        self, write: GroupWrite, *, max_rows: int = MAX_GROUP_ROWS, slots: int = COMMIT_SLOTS
    ) -> None:
        self._write = write
        self._max_rows = max_rows
        self._free = slots
        self._pending: deque[WriteJob] = deque()
        self._lock = threading.Lock()
        self.transactions = 0  # committed shared transactions (for tests and metrics)
        self.jobs = 0  # jobs those transactions answered without an error of their own

    def submit(
        self,
        namespace: str,
        rows: list[dict[str, Any]],
        references: frozenset[str] = frozenset(),
        resolve: Callable[[Mapping[str, dict[str, Any]]], None] | None = None,
    ) -> dict[str, bool]:
        """Write `rows` (with others queued meanwhile); returns once their transaction committed."""
        job = WriteJob(namespace, rows, references, resolve)
        with self._lock:
            self._pending.append(job)
        while True:
            with self._lock:
                if job.done:
                    break
                if self._free == 0 or not self._pending:
                    # Cleared under the lock: whatever sets it later (a finished transaction, a freed
                    # slot) does so under the lock too, so no wake-up is lost.
                    job.signal.clear()
                    batch = None
                else:
                    self._free -= 1
                    batch = self._take()
            if batch is None:
                job.signal.wait()
                continue
            try:
                self._commit(batch)
            finally:
                with self._lock:
                    self._free += 1
                    if self._pending:  # the oldest queued caller leads the next transaction
                        self._pending[0].signal.set()
        if isinstance(job.error, Retryable):  # one error shared by several callers: each raises its own
            raise Retryable(job.error.message) from job.error
        if job.error is not None:
            raise job.error
        return job.result

    def _take(self) -> list[WriteJob]:
        """The oldest queued jobs, up to max_rows in all (at least one); called holding the lock."""
        batch = [self._pending.popleft()]
        rows = len(batch[0].rows)
        while self._pending and rows + len(self._pending[0].rows) <= self._max_rows:
            job = self._pending.popleft()
            rows += len(job.rows)
            batch.append(job)
        return batch

    def _commit(self, batch: list[WriteJob]) -> None:
        try:
            results = self._write(batch)
        except Retryable as exc:  # the store's retries ran out: every caller may retry later (503)
            self._finish(batch, error=exc)
        except Exception as exc:
            if len(batch) == 1:
                self._finish(batch, error=exc)
            else:
                log.info(
                    "a shared write of %d requests failed (%s); writing them one by one", len(batch), exc
                )
                for job in batch:
                    self._commit([job])
        else:
            with self._lock:
                self.transactions += 1
                # A job whose references did not resolve is answered with its error: not counted.
                self.jobs += sum(not isinstance(result, Exception) for result in results)
            for job, result in zip(batch, results, strict=True):
                if isinstance(result, Exception):
                    job.error = result
                else:
                    job.result = result
            self._finish(batch)

    def _finish(self, batch: list[WriteJob], error: BaseException | None = None) -> None:
        with self._lock:
            for job in batch:
                if error is not None:
                    job.error = error
                job.done = True
                job.signal.set()
