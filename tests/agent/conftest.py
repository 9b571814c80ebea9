"""Shared fixtures for the agent tests: one compile cache and one CPU target per session."""

from __future__ import annotations

from pathlib import Path

import pytest

from kernelgraph.agent.backends.c import CBackend
from kernelgraph.agent.targets import Target, get_target
from tests.prerequisites import unavailable


@pytest.fixture(scope="session")
def cpu_target() -> Target:
    target = get_target("cpu-x86-64-v2")
    if not target.available:
        unavailable(f"x86-64-v2 is unavailable: {target.unavailable_reason}")
    return target


@pytest.fixture(scope="session")
def c_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("c-cache")


@pytest.fixture(scope="session")
def backend(c_cache: Path) -> CBackend:
    return CBackend(cache_dir=c_cache, check_timeout_s=20.0, counters=False)
