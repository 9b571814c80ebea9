"""A release's recorded graph (tests/fixtures/graphs/<release>/graph.dump) on a throw-away local Neo4j."""

from __future__ import annotations

import shutil
import socket
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from kernelgraph.core.settings import Settings
from kernelgraph.service.neo4j_local import LocalNeo4j
from kernelgraph.service.store import GraphStore, open_driver
from tests.prerequisites import unavailable

GRAPHS = Path(__file__).resolve().parent.parent / "fixtures" / "graphs"
RELEASES = sorted(path.name for path in GRAPHS.iterdir() if (path / "graph.dump").exists())
# The newest release written before migrations 0014 (counters of a separate build) and 0015 (evidence
# keys, which also re-keyed 0010's rollups): the tests of those upgrades, and the rollups test that
# strips 0010 off a graph, need a graph those migrations have not yet been applied to (v5 was written
# at schema 0018).
BEFORE_EVIDENCE_KEYS = "v4"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextmanager
def release_graph(release: str, home: Path) -> Iterator[tuple[LocalNeo4j, GraphStore]]:
    """The release's graph, not yet upgraded, on a server of its own (loading replaces its only
    database), stopped afterwards."""
    if not (shutil.which("java") and shutil.which("mvn")):
        unavailable("the upgrade test loads a dump into a local Neo4j: it needs Java 17 and Maven")
    settings = Settings(data_home=home, bolt_port=free_port(), http_port=free_port(), neo4j_heap="512m",
                        neo4j_pagecache="128m")  # fmt: skip
    server = LocalNeo4j(settings)
    server.load(GRAPHS / release / "graph.dump")
    server.start()
    driver = open_driver(settings)
    try:
        yield server, GraphStore(driver, settings.neo4j_database)
    finally:
        driver.close()
        server.stop()
