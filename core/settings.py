"""Configuration, from the environment (prefix KERNELGRAPH_) or a .env file; docs/configuration.md lists it.

One class per role, each reading only its own variables: `ClientSettings` (how to reach the graph),
`AgentSettings` (the client's, plus the llm proposer's), `Neo4jSettings` (the store), `ServiceSettings`
(the store's, plus `kernelgraph serve`'s), all on `CommonSettings` (where files live); `Settings` holds
them all.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

from pydantic import Field, SecretStr
from pydantic_settings import BaseSettings, SettingsConfigDict


class CommonSettings(BaseSettings):
    """What every role reads: where KernelGraph keeps its files. The base of each role's settings."""

    model_config = SettingsConfigDict(env_prefix="KERNELGRAPH_", env_file=".env", extra="ignore")

    data_home: Path = Field(
        default=Path("~/.local/share/kernelgraph"),
        description="Where the local Neo4j server, its password file and the measured host peaks live.",
    )
    cache_dir: Path = Field(
        default=Path("~/.cache/kernelgraph"),
        description="Downloaded Neo4j jars and compiled kernels (c/, triton/), shared by every data home.",
    )

    @property
    def home(self) -> Path:
        return self.data_home.expanduser()

    @property
    def cache_path(self) -> Path:
        """Where compiled kernels (cache_path/c, cache_path/triton) and the Neo4j jars are cached."""
        return self.cache_dir.expanduser()


class ClientSettings(CommonSettings):
    """How a client reaches the experience graph: a service's URL and key, or the in-process namespace."""

    service_url: str | None = Field(
        default=None,
        description="URL of a running KernelGraph service for the agent (e.g. http://127.0.0.1:8600). "
        "Unset: the agent talks to Neo4j in-process.",
    )
    api_key: SecretStr | None = Field(default=None, description="API key the agent presents to the service.")
    namespace: str = Field(default="default", description="Namespace the agent writes to in-process.")


class AgentSettings(ClientSettings):
    """What the agent reads: its connection (ClientSettings) and the llm proposer's model."""

    anthropic_model: str = Field(default="claude-sonnet-4-5", description="Model used by the llm proposer.")
    anthropic_base_url: str | None = Field(
        default=None, description="Override of the Anthropic API base URL (tests point it at a local stub)."
    )


class Neo4jSettings(CommonSettings):
    """The Neo4j server that holds the graph: a configured one, or the local server under data_home."""

    neo4j_uri: str | None = Field(
        default=None,
        description="Bolt or routing URI of the Neo4j server (bolt://, neo4j://, neo4j+s://). "
        "Unset: the local server under data_home is used.",
    )
    neo4j_user: str = Field(default="neo4j", description="Neo4j user name.")
    neo4j_password: SecretStr | None = Field(
        default=None,
        description="Neo4j password. Unset with the local server: read from <data_home>/neo4j/password.",
    )
    neo4j_database: str = Field(default="neo4j", description="Neo4j database that holds the graph.")
    bolt_port: int = Field(default=7687, ge=1, le=65535, description="Bolt port of the local server.")
    http_port: int = Field(
        default=7474, ge=1, le=65535, description="HTTP (Browser) port of the local server."
    )
    neo4j_heap: str = Field(default="1g", description="Maximum heap of the local server (e.g. 1g, 2g).")
    neo4j_pagecache: str = Field(default="512m", description="Page cache of the local server.")

    @property
    def neo4j_home(self) -> Path:
        return self.home / "neo4j"

    @property
    def uses_local_server(self) -> bool:
        return self.neo4j_uri is None

    @property
    def effective_neo4j_uri(self) -> str:
        return self.neo4j_uri or f"bolt://127.0.0.1:{self.bolt_port}"

    def effective_neo4j_password(self) -> str:
        """The configured password, else the local server's password file."""
        if self.neo4j_password is not None:
            return self.neo4j_password.get_secret_value()
        password_file = self.neo4j_home / "password"
        if password_file.exists():
            return password_file.read_text().strip()
        from kernelgraph.core.errors import LocalServerError

        raise LocalServerError(
            f"no Neo4j password: set KERNELGRAPH_NEO4J_PASSWORD or run `kernelgraph neo4j start` "
            f"(it writes {password_file})",
            field="neo4j_password",
        )


class ServiceSettings(Neo4jSettings):
    """What `kernelgraph serve` reads: its Neo4j (Neo4jSettings), where it listens, its rate limit and
    how often it consolidates."""

    host: str = Field(default="127.0.0.1", description="Address `kernelgraph serve` listens on.")
    port: int = Field(default=8600, ge=1, le=65535, description="Port `kernelgraph serve` listens on.")
    rate_limit_per_s: float = Field(
        default=0.0,
        ge=0,
        description="Requests per second each API key may make to `kernelgraph serve`, sustained "
        "(0, the default: no limit; e.g. 20 for keys of single agents). Each replica counts its own. "
        "Over it: 429 with Retry-After.",
    )
    rate_limit_burst: int = Field(
        default=100, ge=1, description="Requests a key may make at once before its rate limit applies."
    )
    consolidate_interval_s: float = Field(
        default=0.0,
        ge=0.0,
        description="`kernelgraph serve` consolidates every namespace this often, in seconds (0: never; "
        "`kernelgraph consolidate` runs it by hand). docs/retrieval.md says what it changes.",
    )


class Settings(ServiceSettings, AgentSettings):
    """Every setting, for a process that plays every role: the `kernelgraph` command, an agent on an
    in-process service (client and Neo4j at once). Build one with `get_settings()` or explicitly in tests."""


# Each role's own settings, in the order docs/configuration.md lists them (scripts/gen_config_docs.py).
ROLES: tuple[type[CommonSettings], ...] = (
    CommonSettings,
    ClientSettings,
    AgentSettings,
    Neo4jSettings,
    ServiceSettings,
)


@lru_cache(maxsize=1)
def get_settings() -> Settings:
    """The process's settings, read once on first use (never at import)."""
    return Settings()
