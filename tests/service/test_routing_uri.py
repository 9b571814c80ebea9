"""The service works unchanged with a `neo4j://` routing URI (what a cluster or Aura needs), here
against the single local server: its advertised Bolt address makes the routing table point back at it."""

from __future__ import annotations

from urllib.parse import urlsplit

import pytest
from pydantic import SecretStr

from kernelgraph.core.settings import Settings
from kernelgraph.service.knowledge import KnowledgeService
from kernelgraph.service.store import GraphStore, open_driver
from tests import factories

pytestmark = pytest.mark.neo4j


def test_reads_and_writes_through_a_routing_uri(
    neo4j_settings: Settings, store: GraphStore, namespace: str
) -> None:
    bolt = urlsplit(neo4j_settings.effective_neo4j_uri)
    if bolt.scheme not in ("bolt", "neo4j"):
        pytest.skip(f"the test server speaks {bolt.scheme}://; this test needs a plain local Bolt port")
    routing = Settings(
        neo4j_uri=f"neo4j://{bolt.hostname}:{bolt.port}",
        neo4j_user=neo4j_settings.neo4j_user,
        neo4j_password=SecretStr(neo4j_settings.effective_neo4j_password()),
        neo4j_database=neo4j_settings.neo4j_database,
    )
    assert routing.effective_neo4j_uri.startswith("neo4j://")
    driver = open_driver(routing)
    try:
        knowledge = KnowledgeService(GraphStore(driver, routing.neo4j_database))
        knowledge.upsert_targets(namespace, [factories.target()])  # a write, routed to the leader
        results = knowledge.record_attempts(namespace, [factories.attempt(key="routing-1:0")])
        assert results[0].created
        listed = knowledge.list_targets([namespace])  # a read, routed with routing_=READ
        assert [row["name"] for row in listed] == ["cpu-test"]
        assert listed[0]["attempts"] == 1
    finally:
        driver.close()
