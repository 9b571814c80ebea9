"""The OpenAPI contract is true: schemathesis, run against the served /openapi.json with every check.

Bounded and reproducible: a fixed seed, at most EXAMPLES cases per operation and phase, one worker.
The key is a writer's, so generated namespaces other than its own get 403 and nothing outside the
test's namespace is written. Rate limits are off for this app (they are tested in test_operations.py):
otherwise most generated requests would be answered 429, which the contract allows but tests nothing.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from kernelgraph.core.settings import Settings
from kernelgraph.service.api.app import create_app
from kernelgraph.service.store import GraphStore
from tests.service.conftest import Keys, serve

pytestmark = pytest.mark.neo4j

SEED = 20261130
EXAMPLES = 12
SCHEMATHESIS = Path(sys.executable).with_name("schemathesis")


@pytest.fixture(scope="module")
def unlimited_url(neo4j_settings: Settings, store: GraphStore) -> Iterator[str]:
    live = serve(create_app(neo4j_settings.model_copy(update={"rate_limit_per_s": 0.0})))
    try:
        yield live.url
    finally:
        live.stop()


def test_schemathesis_finds_no_failure(
    unlimited_url: str, keys: Keys, repo_root: Path, tmp_path: Path
) -> None:
    command = [
        str(SCHEMATHESIS), "run", f"{unlimited_url}/openapi.json",
        "--checks", "all", "--seed", str(SEED), "--max-examples", str(EXAMPLES), "--workers", "1",
        "--generation-database", "none", "--no-color", "--request-timeout", "30",
        "--header", f"Authorization: Bearer {keys.writer}",
        "--report", "junit", "--report-dir", str(tmp_path),
    ]  # fmt: skip
    env = {**os.environ, "SCHEMATHESIS_HOOKS": "tests.service.schemathesis_hooks",
           "PYTHONPATH": str(repo_root)}  # fmt: skip
    run = subprocess.run(command, cwd=repo_root, env=env, capture_output=True, text=True, timeout=900)
    output = run.stdout + run.stderr
    assert run.returncode == 0, output[-20_000:]
    counted = re.search(r"(\d+) generated, (\d+) passed", output)
    assert counted and counted[1] == counted[2] and int(counted[1]) > 500, output[-5_000:]
    # Every operation was exercised (a schema that failed to load would test nothing and still pass).
    # 19: the 16 routes before issues 28 and 33, the two operator routes (key revocation, quarantine)
    # and GET /v1/vocabulary.
    assert "Tested: 19" in output or "19/19" in output, output[-3_000:]
