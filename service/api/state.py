"""What the service's lifespan builds once per process and every request shares."""

from __future__ import annotations

from dataclasses import dataclass

from neo4j import Driver

from kernelgraph.core.settings import Settings
from kernelgraph.service.api.ratelimit import RateLimiter
from kernelgraph.service.auth import KeyAuthenticator
from kernelgraph.service.knowledge import KnowledgeService
from kernelgraph.service.store import GraphStore


@dataclass
class ServiceState:
    """What the lifespan builds once per process and every request shares."""

    settings: Settings
    driver: Driver
    store: GraphStore
    knowledge: KnowledgeService
    authenticator: KeyAuthenticator
    limiter: RateLimiter
