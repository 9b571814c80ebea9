"""Fixtures of the service tests: the real app served by uvicorn on a free port, and API keys."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass

import httpx
import pytest
import uvicorn
from fastapi import FastAPI

from kernelgraph.core.models import Role
from kernelgraph.core.settings import Settings
from kernelgraph.service.api.app import create_app
from kernelgraph.service.auth import create_key
from kernelgraph.service.store import GraphStore


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass
class LiveServer:
    url: str
    server: uvicorn.Server
    thread: threading.Thread

    def stop(self) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=15)


def serve(app: FastAPI) -> LiveServer:
    """Run `app` with uvicorn in a background thread on a free port; returns once it accepts requests."""
    port = free_port()
    config = uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", lifespan="on")
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, name=f"uvicorn-{port}", daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            raise RuntimeError("uvicorn did not start")
        time.sleep(0.02)
    return LiveServer(f"http://127.0.0.1:{port}", server, thread)


@pytest.fixture(scope="session")
def live_url(neo4j_settings: Settings, store: GraphStore) -> Iterator[str]:
    """Base URL of the real app (its own driver, opened by its lifespan) on the session's Neo4j."""
    live = serve(create_app(neo4j_settings))
    try:
        yield live.url
    finally:
        live.stop()


@dataclass(frozen=True)
class Keys:
    namespace: str
    reader: str
    writer: str
    admin: str


def make_keys(store: GraphStore, namespace: str) -> Keys:
    return Keys(
        namespace=namespace,
        reader=create_key(store, Role.READER, namespace, "test reader").key,
        writer=create_key(store, Role.WRITER, namespace, "test writer").key,
        admin=create_key(store, Role.ADMIN, namespace, "test admin").key,
    )


@pytest.fixture
def keys(store: GraphStore, namespace: str) -> Keys:
    """A reader, a writer and an admin key of this test's namespace."""
    return make_keys(store, namespace)


def bearer(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}


@pytest.fixture
def http(live_url: str) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=live_url, timeout=60) as client:
        yield client
