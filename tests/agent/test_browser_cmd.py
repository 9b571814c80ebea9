"""`kernelgraph browser`: the Browser URL for the local server and for remote URIs."""

from __future__ import annotations

from pathlib import Path

from pydantic import SecretStr

from kernelgraph.cli.browser import browser_link
from kernelgraph.core.settings import Settings


def test_local_server_url_fills_in_the_bolt_address(tmp_path: Path) -> None:
    link = browser_link(Settings(neo4j_uri=None, data_home=tmp_path, bolt_port=27687, http_port=27474))
    assert link.url == "http://127.0.0.1:27474/browser/?connectURL=bolt://127.0.0.1:27687"
    assert link.user == "neo4j"
    assert str(tmp_path / "neo4j" / "password") in link.password_hint
    assert link.note is None


def test_tls_routing_uri_uses_the_hosted_browser() -> None:
    link = browser_link(Settings(neo4j_uri="neo4j+s://abc.databases.neo4j.io", neo4j_password=SecretStr("x")))
    assert link.url == "https://browser.neo4j.io/?connectURL=neo4j%2Bs://abc.databases.neo4j.io"
    assert "KERNELGRAPH_NEO4J_PASSWORD" in link.password_hint
    assert link.note


def test_remote_bolt_server_assumes_its_own_browser() -> None:
    link = browser_link(Settings(neo4j_uri="bolt://db.internal:7687", neo4j_password=SecretStr("x")))
    assert link.url == "http://db.internal:7474/browser/?connectURL=bolt://db.internal:7687"
