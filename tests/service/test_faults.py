"""Faults, for real: the service killed -9 mid-load, Neo4j killed -9 mid-load, and the driver's connection
closed mid-transaction. Agents retry every attempt on the same attempt key until it is acknowledged;
afterwards every attempt acknowledged before the kill is stored exactly once, every stored attempt is
whole (kernels, transform, target, both measurements, its aggregate), and no request got a 500."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest

from kernelgraph.core.models import Role
from kernelgraph.core.settings import Settings
from kernelgraph.service import migrate
from kernelgraph.service.api.app import create_app
from kernelgraph.service.auth import create_key
from kernelgraph.service.knowledge import KnowledgeService
from kernelgraph.service.store import DRIVER_RETRY_SECONDS, GraphStore, open_driver
from tests import factories
from tests.prerequisites import unavailable
from tests.service.conftest import free_port, serve
from tests.service.test_state_evidence import assert_consistent

pytestmark = [pytest.mark.neo4j, pytest.mark.slow]

WHOLE = """
MATCH (a:Attempt {namespace: $ns})
RETURN count(a) AS attempts,
       count(DISTINCT a.attempt_key) AS keys,
       sum(CASE WHEN (a)-[:FROM]->(:Kernel) AND (a)-[:PRODUCED]->(:Kernel) AND (a)-[:APPLIED]->(:Transform)
                 AND (a)-[:ON_TARGET]->(:HardwareTarget) AND (a)-[:FROM_STATE]->(:Measurement)
                 AND (a)-[:RESULTED_IN]->(:Measurement) THEN 1 ELSE 0 END) AS whole,
       collect(a.attempt_key) AS stored
"""


@dataclass
class Load:
    """Agents recording attempts over HTTP, each retrying one attempt until it is acknowledged."""

    url: Callable[[], str]
    key: str
    agents: int
    per_agent: int
    run: str
    acknowledged: dict[str, float] = field(default_factory=dict)
    statuses: Counter[int | str] = field(default_factory=Counter)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def attempt(self, agent: int, step: int) -> dict[str, Any]:
        return factories.attempt(
            f"{self.run}-a{agent}:{step}",
            parent_source=f"void kernel(void) {{ /* agent {agent} state {step // 4} */ }}",
            child_source=f"void kernel(void) {{ /* agent {agent} step {step} */ }}",
            speedup=1.1 + (step % 7) / 10,  # kept: faster than the parent
        )

    def agent(self, agent: int) -> None:
        headers = {"Authorization": f"Bearer {self.key}"}
        for step in range(self.per_agent):
            body = self.attempt(agent, step)
            delay = 0.05
            while True:
                try:
                    with httpx.Client(base_url=self.url(), headers=headers, timeout=30) as http:
                        response = http.post("/v1/attempts", json=body)
                    status: int | str = response.status_code
                except httpx.HTTPError as exc:
                    status = type(exc).__name__
                with self.lock:
                    self.statuses[status] += 1
                    if status in (200, 201):
                        self.acknowledged.setdefault(body["attempt_key"], time.monotonic())
                if status in (200, 201):
                    break
                if isinstance(status, int) and status != 503:
                    return  # an unexpected answer: counted in statuses, the test fails on it
                time.sleep(delay)
                delay = min(delay * 2, 1.0)

    def run_with(self, fault: Callable[[], None], at: float = 0.5) -> dict[str, float]:
        """Run every agent; when `at` of all attempts are acknowledged, run `fault`. Returns the
        attempts acknowledged before the fault began."""
        threads = [threading.Thread(target=self.agent, args=(i,), daemon=True) for i in range(self.agents)]
        for thread in threads:
            thread.start()
        total = self.agents * self.per_agent
        deadline = time.monotonic() + 600
        while len(self.acknowledged) < at * total:
            assert time.monotonic() < deadline, "the load did not get half way"
            time.sleep(0.01)
        with self.lock:
            before = dict(self.acknowledged)
        fault()
        for thread in threads:
            thread.join(timeout=600)
        return before


def check_graph(store: GraphStore, namespace: str, load: Load, before: dict[str, float]) -> None:
    unexpected = {s: n for s, n in load.statuses.items() if s not in (200, 201, 503) and isinstance(s, int)}
    assert not unexpected, f"answers other than 200/201/503: {unexpected}"
    row = store.driver.execute_query(WHOLE, ns=namespace, database_=store.database).records[0]
    stored = set(row["stored"])
    assert set(before) <= stored, "an attempt acknowledged before the kill is missing"
    assert row["attempts"] == row["keys"] == len(stored), "an attempt is stored twice"
    assert row["whole"] == row["attempts"], "a stored attempt is half-written"
    assert stored == set(load.acknowledged), "every agent retried until acknowledged"
    assert len(stored) == load.agents * load.per_agent
    assert sum(e["attempts"] for e in assert_consistent(store, namespace)) == len(stored)


def _wait_http(url: str, timeout_s: float = 60) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            if httpx.get(f"{url}/v1/health", timeout=2).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.1)
    raise RuntimeError(f"the service at {url} did not come up")


def test_service_killed_mid_load_loses_no_acknowledged_attempt(
    store: GraphStore, neo4j_settings: Settings, namespace: str, tmp_path: Path
) -> None:
    """64 agents x 10 attempts over HTTP; `kernelgraph serve` is killed with SIGKILL half way and restarted."""
    KnowledgeService(store).upsert_targets(namespace, [factories.target()])
    key = create_key(store, Role.WRITER, namespace, "fault test").key
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    env = {
        **os.environ,
        "KERNELGRAPH_NEO4J_URI": neo4j_settings.effective_neo4j_uri,
        "KERNELGRAPH_NEO4J_PASSWORD": neo4j_settings.effective_neo4j_password(),
        "KERNELGRAPH_NEO4J_DATABASE": neo4j_settings.neo4j_database,
    }
    kernelgraph = str(Path(sys.executable).parent / "kernelgraph")
    command = [kernelgraph, "serve", "--host", "127.0.0.1", "--port", str(port)]
    log = (tmp_path / "serve.log").open("wb")
    processes = [subprocess.Popen(command, env=env, stdout=log, stderr=subprocess.STDOUT)]
    try:
        _wait_http(url)
        load = Load(lambda: url, key, agents=64, per_agent=10, run="svc")

        def kill_and_restart() -> None:
            processes[-1].send_signal(signal.SIGKILL)
            processes[-1].wait()
            processes.append(subprocess.Popen(command, env=env, stdout=log, stderr=subprocess.STDOUT))
            _wait_http(url)

        before = load.run_with(kill_and_restart)
    finally:
        for process in processes:
            if process.poll() is None:
                process.terminate()
                process.wait(timeout=30)
        log.close()
    assert 0 < len(before) < 64 * 10
    check_graph(store, namespace, load, before)


@pytest.fixture(scope="module")
def own_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Settings]:
    """A Neo4j of this module's own: the test kills it."""
    import shutil

    from kernelgraph.service.neo4j_local import LocalNeo4j

    if not (shutil.which("java") and shutil.which("mvn")):
        unavailable("killing Neo4j needs a local server: Java 17 and Maven")
    settings = Settings(data_home=tmp_path_factory.mktemp("neo4j-kill"), bolt_port=free_port(),
                        http_port=free_port(), neo4j_heap="512m", neo4j_pagecache="128m")  # fmt: skip
    server = LocalNeo4j(settings)
    server.start()
    try:
        yield settings
    finally:
        server.stop()


def test_neo4j_killed_mid_load_loses_no_acknowledged_attempt(own_server: Settings) -> None:
    """16 agents x 15 attempts over HTTP; Neo4j is killed with SIGKILL half way, then restarted (recovery
    from its transaction log). Meanwhile the service answers 503, never 500."""
    from kernelgraph.service.neo4j_local import LocalNeo4j

    server = LocalNeo4j(own_server)
    namespace = "neo4j-kill"
    with open_driver(own_server) as driver:
        store = GraphStore(driver, own_server.neo4j_database)
        migrate.apply(store)
        KnowledgeService(store).upsert_targets(namespace, [factories.target()])
        key = create_key(store, Role.WRITER, namespace, "fault test").key
    live = serve(create_app(own_server))
    try:
        load = Load(lambda: live.url, key, agents=16, per_agent=15, run="neo")

        def kill_and_restart() -> None:
            pid = server.status().pid
            assert pid is not None
            os.killpg(pid, signal.SIGKILL)
            with contextlib.suppress(ChildProcessError):
                os.waitpid(pid, 0)  # the launcher is this process's child: reap it, or it looks alive
            deadline = time.monotonic() + 30
            while server.status().running and time.monotonic() < deadline:
                time.sleep(0.1)
            # Down for longer than the driver retries a transaction, so requests meanwhile must end as
            # 503 (a shorter outage is retried away inside the driver and the test would prove nothing).
            time.sleep(DRIVER_RETRY_SECONDS + 2)
            server.start()

        before = load.run_with(kill_and_restart)
    finally:
        live.stop()
    assert load.statuses[503] + sum(n for s, n in load.statuses.items() if isinstance(s, str)) > 0, (
        "the kill was not noticed: the test proved nothing"
    )
    with open_driver(own_server) as driver:
        check_graph(GraphStore(driver, own_server.neo4j_database), namespace, load, before)


def test_connection_closed_mid_transaction_writes_once(store: GraphStore, namespace: str) -> None:
    """The server closes the driver's connection after the attempt's queries ran but before the commit:
    the transaction is rolled back whole, the driver retries the (idempotent) write, and the attempt is
    stored once, with one count in its aggregate."""
    knowledge = KnowledgeService(store)
    knowledge.upsert_targets(namespace, [factories.target()])
    killed: list[int] = []
    original = store.run_in

    def run_in(tx: Any, name: str, /, **params: Any) -> list[dict[str, Any]]:
        rows = original(tx, name, **params)
        if name == "record_attempts" and not killed:
            # The connection of the open transaction (this one): every other one is idle in the pool.
            connections = store.driver.execute_query(
                "SHOW TRANSACTIONS YIELD connectionId, currentQuery "
                "WHERE NOT currentQuery CONTAINS 'SHOW TRANSACTIONS' RETURN collect(connectionId) AS ids",
                database_=store.database,
            ).records[0]["ids"]
            killed.append(len(connections))
            store.driver.execute_query("CALL dbms.killConnections($ids)", ids=connections,
                                       database_=store.database)  # fmt: skip
        return rows

    store.run_in = run_in  # type: ignore[method-assign]
    try:
        [result] = knowledge.record_attempts(namespace, [factories.attempt("cut:0")])
    finally:
        del store.run_in
    assert killed and killed[0] >= 1
    assert result.created
    row = store.driver.execute_query(WHOLE, ns=namespace, database_=store.database).records[0]
    assert (row["attempts"], row["whole"]) == (1, 1)
    assert [e["attempts"] for e in assert_consistent(store, namespace)] == [1]
