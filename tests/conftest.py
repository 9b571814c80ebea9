"""Shared fixtures. The Neo4j server is real: KERNELGRAPH_NEO4J_URI if set, else a throw-away local
server started for this test session on free ports, else testcontainers' Neo4jContainer when a
Docker engine answers."""

from __future__ import annotations

import os
import shutil
import socket
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from types import ModuleType

import pytest

from kernelgraph.core.settings import Settings
from tests.prerequisites import unavailable


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _docker_answers() -> bool:
    try:
        import docker

        docker.from_env().ping()
        return True
    except Exception:
        return False


@pytest.fixture(scope="session")
def neo4j_settings(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Settings]:
    """Settings that point at a real Neo4j 5 server for the whole test session."""
    if os.environ.get("KERNELGRAPH_NEO4J_URI"):
        yield Settings()
        return
    if shutil.which("java") and shutil.which("mvn"):
        from kernelgraph.service.neo4j_local import LocalNeo4j

        home = tmp_path_factory.mktemp("kernelgraph-home")
        settings = Settings(
            data_home=home,
            bolt_port=_free_port(),
            http_port=_free_port(),
            neo4j_heap="1g",
            neo4j_pagecache="256m",
        )
        server = LocalNeo4j(settings)
        server.start()
        try:
            yield settings
        finally:
            server.stop()
        return
    if _docker_answers():
        from testcontainers.neo4j import Neo4jContainer

        with Neo4jContainer("neo4j:5.26-community", password="kernelgraph-test") as container:
            yield Settings(neo4j_uri=container.get_connection_url(), neo4j_password="kernelgraph-test")
        return
    unavailable("no Neo4j: set KERNELGRAPH_NEO4J_URI, install Java 17 + Maven, or run a Docker engine")


@pytest.fixture(scope="session")
def driver(neo4j_settings: Settings) -> Iterator[object]:
    from kernelgraph.service.store import open_driver

    drv = open_driver(neo4j_settings)
    yield drv
    drv.close()


@pytest.fixture(scope="session")
def store(driver: object, neo4j_settings: Settings):  # type: ignore[no-untyped-def]
    from kernelgraph.service import migrate
    from kernelgraph.service.store import GraphStore

    graph = GraphStore(driver, neo4j_settings.neo4j_database)  # type: ignore[arg-type]
    migrate.apply(graph)
    return graph


@pytest.fixture
def namespace() -> str:
    """A namespace of its own for each test: tests never see each other's data."""
    return f"t-{uuid.uuid4().hex[:12]}"


@pytest.fixture(scope="session")
def repo_root() -> Path:
    return Path(__file__).resolve().parent.parent


@pytest.fixture
def cli_on_test_neo4j(
    neo4j_settings: Settings, store: object, monkeypatch: pytest.MonkeyPatch
) -> Iterator[None]:
    """The `kernelgraph` CLI, run in-process by a test, talks to this session's Neo4j (through the
    environment, as a user's shell would), with the settings cache cleared before and after."""
    from kernelgraph.core.settings import get_settings

    for key in ("neo4j_uri", "data_home", "bolt_port", "http_port", "neo4j_database"):
        value = getattr(neo4j_settings, key)
        if value is not None:
            monkeypatch.setenv(f"KERNELGRAPH_{key.upper()}", str(value))
    if neo4j_settings.neo4j_password is not None:
        monkeypatch.setenv("KERNELGRAPH_NEO4J_PASSWORD", neo4j_settings.neo4j_password.get_secret_value())
    get_settings.cache_clear()
    yield
    get_settings.cache_clear()


@pytest.fixture
def bench_module_on_test_neo4j(
    neo4j_settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> Callable[[str], ModuleType]:
    """A fresh copy of the diagnostic kernelgraph.bench.<name> whose settings are this session's Neo4j
    (the diagnostics call `get_settings()` themselves)."""
    from tests import factories

    def load(name: str) -> ModuleType:
        module = factories.bench_module(name)
        monkeypatch.setattr(module, "get_settings", lambda: neo4j_settings)
        return module

    return load


_SESSION_START: dict[str, float] = {}


def pytest_sessionstart(session: pytest.Session) -> None:
    from kernelgraph.agent.backends.isolated import stolen_ns

    _SESSION_START.update(wall=time.monotonic(), stolen_ns=stolen_ns(os.sched_getaffinity(0)))


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """The host's share of the run: timing tests that fail on CI alone are read beside it (the
    hypervisor's steal is seen by no count of runnable tasks; agent/backends/isolated.py)."""
    from kernelgraph.agent.backends.isolated import stolen_ns

    if not _SESSION_START:
        return
    cpus = os.sched_getaffinity(0)
    wall = time.monotonic() - _SESSION_START["wall"]
    stolen = (stolen_ns(cpus) - _SESSION_START["stolen_ns"]) / 1e9
    load = " ".join(f"{x:.2f}" for x in os.getloadavg())
    terminalreporter.write_line(
        f"host: the hypervisor took {stolen:.1f} s of {len(cpus)} CPUs over {wall:.0f} s "
        f"({stolen / max(wall * len(cpus), 1e-9):.2%}); load average {load}"
    )
