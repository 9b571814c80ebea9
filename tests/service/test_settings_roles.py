"""Settings by role (core/settings.py): each role reads only its own variables, under the names and
defaults users already set."""

from __future__ import annotations

import pytest

from kernelgraph.core.settings import (
    ROLES,
    AgentSettings,
    ClientSettings,
    ServiceSettings,
    Settings,
)

# Every variable KernelGraph has read since the settings were one class: none may be renamed.
VARIABLES = {
    "NEO4J_URI", "NEO4J_USER", "NEO4J_PASSWORD", "NEO4J_DATABASE", "DATA_HOME", "CACHE_DIR", "BOLT_PORT",
    "HTTP_PORT", "NEO4J_HEAP", "NEO4J_PAGECACHE", "HOST", "PORT", "RATE_LIMIT_PER_S", "RATE_LIMIT_BURST",
    "SERVICE_URL", "API_KEY", "NAMESPACE", "ANTHROPIC_MODEL", "ANTHROPIC_BASE_URL", "CONSOLIDATE_INTERVAL_S",
}  # fmt: skip


def test_every_variable_keeps_its_name_and_belongs_to_exactly_one_role() -> None:
    owned = [name for role in ROLES for name in role.__annotations__]
    assert len(owned) == len(set(owned)), "a setting is declared by two roles"
    assert set(owned) == set(Settings.model_fields)
    assert {name.upper() for name in owned} == VARIABLES


def test_each_role_reads_its_own_variables_and_no_other(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KERNELGRAPH_PORT", "9123")
    monkeypatch.setenv("KERNELGRAPH_NAMESPACE", "team-a")
    monkeypatch.setenv("KERNELGRAPH_ANTHROPIC_MODEL", "model-x")
    client, agent, service = ClientSettings(), AgentSettings(), ServiceSettings()
    assert client.namespace == agent.namespace == "team-a" and agent.anthropic_model == "model-x"
    assert service.port == 9123 and not hasattr(client, "port") and not hasattr(service, "namespace")
    assert not hasattr(client, "neo4j_password") and not hasattr(agent, "neo4j_uri")
    every = Settings()
    assert (every.port, every.namespace, every.anthropic_model) == (9123, "team-a", "model-x")
    defaults = {name: field.default for name, field in Settings.model_fields.items()}
    assert (defaults["neo4j_user"], defaults["bolt_port"], defaults["port"]) == ("neo4j", 7687, 8600)
