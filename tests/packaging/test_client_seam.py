"""The client is usable alone: importing it loads no server, and what a base install lacks is named
with the extra that brings it. Each case runs in a fresh interpreter so that nothing is preloaded."""

from __future__ import annotations

import json
import subprocess
import sys

HEAVY = ("kernelgraph.service", "kernelgraph.agent", "neo4j", "torch", "triton", "fastapi", "numpy")


def _python(code: str, env_extra: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    import os

    env = {k: v for k, v in os.environ.items() if not k.startswith("KERNELGRAPH_")} | (env_extra or {})
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, env=env)


def test_importing_the_client_loads_no_server_and_no_heavy_dependency() -> None:
    result = _python(
        "import json, sys\n"
        "import kernelgraph.client, kernelgraph.core.models, kernelgraph.core.signature\n"
        f"print(json.dumps(sorted(m for m in sys.modules if m.startswith({HEAVY!r}))))"
    )
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout) == []


def test_connect_without_service_url_or_service_extra_says_how_to_fix() -> None:
    # sys.modules[name] = None makes `import name` fail as it does where the package is not installed.
    result = _python(
        "import sys; sys.modules['neo4j'] = None\n"
        "from kernelgraph.client import connect\n"
        "from kernelgraph.core.errors import KernelGraphError\n"
        "try:\n    connect()\nexcept KernelGraphError as exc:\n    print(exc.field, '|', exc.message)\n"
    )
    assert result.returncode == 0, result.stderr
    field, message = result.stdout.strip().split(" | ")
    assert field == "service_url"
    assert "missing: neo4j" in message and "kernelgraph[service]" in message


def test_connect_with_service_url_gives_the_http_client() -> None:
    result = _python(
        "import sys; sys.modules['neo4j'] = None\n"
        "from kernelgraph.client import KernelGraphClient, connect\n"
        "print(type(connect()).__name__)",
        {"KERNELGRAPH_SERVICE_URL": "http://127.0.0.1:9"},
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "KernelGraphClient"


def test_cli_names_the_extra_a_command_needs() -> None:
    result = _python(
        "import sys; sys.modules['neo4j'] = None\n"
        "sys.argv = ['kernelgraph', 'schema', 'status']\n"
        "from kernelgraph.cli import main\n"
        "main()\n"
    )
    assert result.returncode == 1
    assert "pip install 'kernelgraph[service]'" in result.stderr
    assert "Traceback" not in result.stderr
