"""The wheel is the product: built from this checkout, installed (not editable) into a fresh virtual
environment and run from a directory outside the checkout, it starts Neo4j, applies the schema, serves
the API and records and retrieves over HTTP, reading cypher/, schema/ and the Neo4j pom as package data.

The fresh environment borrows the third-party packages of the running one through a .pth line (pip
would otherwise download torch again); KernelGraph itself comes only from the wheel, which the test
checks by asking the installed interpreter where `kernelgraph` lives.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import site
import socket
import subprocess
import sys
import time
import zipfile
from pathlib import Path

import httpx
import pytest

from tests.prerequisites import unavailable

REPO = Path(__file__).resolve().parents[2]
pytestmark = [pytest.mark.neo4j, pytest.mark.slow]


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _run(args: list[str], **kwargs: object) -> subprocess.CompletedProcess[str]:
    result = subprocess.run(args, capture_output=True, text=True, timeout=600, **kwargs)  # type: ignore[call-overload]
    assert result.returncode == 0, f"{' '.join(map(str, args))} failed:\n{result.stdout}\n{result.stderr}"
    return result  # type: ignore[no-any-return]


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("dist")
    _run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "--no-build-isolation",
            "-q",
            "-w",
            str(out),
            str(REPO),
        ]
    )
    (built,) = out.glob("kernelgraph-*.whl")
    return built


def test_wheel_ships_the_data_and_one_import_name(wheel: Path) -> None:
    names = zipfile.ZipFile(wheel).namelist()
    tops = {name.split("/")[0] for name in names if not name.split("/")[0].endswith(".dist-info")}
    assert tops == {"kernelgraph"}, f"the wheel installs top-level names other than kernelgraph: {tops}"
    for needed in ("kernelgraph/cypher/record_attempts.cypher", "kernelgraph/schema/0001_uniqueness_constraints.cypher",
                   "kernelgraph/docker/neo4j/pom.xml", "kernelgraph/docs/kernelgraph.grass",
                   "kernelgraph/client/__init__.py", "kernelgraph/service/knowledge.py", "kernelgraph/cli/__init__.py", "kernelgraph/cli/demo.py", "kernelgraph/bench/demo.py",
                   "kernelgraph/service/importers/data/kernelbench-timing/LICENSE",
                   "kernelgraph/service/importers/data/kernelbench-timing/H100_together/baseline_time_torch.json"):  # fmt: skip
        assert needed in names, f"{needed} is missing from the wheel"


def test_base_install_requires_no_server_and_extras_match_the_roles(wheel: Path) -> None:
    metadata = next(
        zipfile.ZipFile(wheel).read(n).decode()
        for n in zipfile.ZipFile(wheel).namelist()
        if n.endswith("METADATA")
    )
    requires = [
        line.split(":", 1)[1].strip() for line in metadata.splitlines() if line.startswith("Requires-Dist:")
    ]
    base = {re.match(r"[A-Za-z0-9_.-]+", r).group(0) for r in requires if "extra ==" not in r}  # type: ignore[union-attr]
    assert {"httpx", "pydantic"} <= base
    assert not base & {"neo4j", "torch", "triton", "fastapi", "anthropic", "sentence-transformers"}, base
    extras = {
        line.split(":", 1)[1].strip() for line in metadata.splitlines() if line.startswith("Provides-Extra:")
    }
    assert {"service", "agent", "triton", "llm", "dev"} <= extras


@pytest.fixture(scope="module")
def venv(wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    env_dir = tmp_path_factory.mktemp("fresh") / "venv"
    _run([sys.executable, "-m", "venv", str(env_dir)])
    python = env_dir / "bin" / "python"
    _run([str(python), "-m", "pip", "install", "-q", "--no-deps", "--no-index", str(wheel)])
    fresh_site = Path(
        _run([str(python), "-c", "import site; print(site.getsitepackages()[0])"]).stdout.strip()
    )
    # Third-party packages come from the running environment; its editable kernelgraph finder does not
    # (.pth files are only read in site directories, not in directories a .pth line adds).
    (fresh_site / "borrowed-dependencies.pth").write_text("\n".join(site.getsitepackages()) + "\n")
    return env_dir


def test_installed_wheel_runs_the_product_outside_the_checkout(venv: Path, tmp_path: Path) -> None:
    if not (shutil.which("java") and shutil.which("mvn")):
        unavailable("the wheel test starts a local Neo4j: it needs Java 17 and Maven")
    workdir = tmp_path / "elsewhere"
    workdir.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("KERNELGRAPH_", "PYTHON"))}
    env |= {
        "KERNELGRAPH_DATA_HOME": str(tmp_path / "home"), "KERNELGRAPH_BOLT_PORT": str(_free_port()),
        "KERNELGRAPH_HTTP_PORT": str(_free_port()), "KERNELGRAPH_NEO4J_HEAP": "512m",
        "KERNELGRAPH_NEO4J_PAGECACHE": "128m", "KERNELGRAPH_PORT": str(_free_port()),
    }  # fmt: skip
    bin_dir = venv / "bin"
    where = _run(
        [str(bin_dir / "python"), "-c", "import kernelgraph; print(kernelgraph.__file__)"],
        cwd=workdir,
        env=env,
    )
    assert where.stdout.strip().startswith(str(venv)), (
        f"kernelgraph imported from {where.stdout} (not the wheel)"
    )

    def kg(*args: str) -> str:
        return _run([str(bin_dir / "kernelgraph"), *args], cwd=workdir, env=env).stdout

    kg("neo4j", "start")
    serve: subprocess.Popen[str] | None = None
    try:
        assert "0001" in kg("schema", "apply") + kg("schema", "status")
        key = kg("keys", "create", "--role", "writer", "--namespace", "wheel").strip().splitlines()[-1]
        serve = subprocess.Popen([str(bin_dir / "kernelgraph"), "serve"], cwd=workdir, env=env,
                                 stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)  # fmt: skip
        url = f"http://127.0.0.1:{env['KERNELGRAPH_PORT']}"
        deadline = time.monotonic() + 60
        while True:
            try:
                if httpx.get(f"{url}/v1/health", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            assert serve.poll() is None, (
                f"kernelgraph serve exited: {serve.stderr.read() if serve.stderr else ''}"
            )
            assert time.monotonic() < deadline, "kernelgraph serve did not answer within 60 s"
            time.sleep(0.3)
        script = _CLIENT_SCRIPT.format(url=url, key=key)
        answer = json.loads(_run([str(bin_dir / "python"), "-c", script], cwd=workdir, env=env).stdout)
        assert answer["server_modules_loaded"] == []
        assert answer["created"] is True
        assert answer["retrieved"] == ["unroll"]
    finally:
        if serve is not None:
            serve.send_signal(signal.SIGINT)
            serve.wait(timeout=30)
        kg("neo4j", "stop")


# Runs in the fresh environment: the client alone, over HTTP; it must not load the server side.
_CLIENT_SCRIPT = """
import json, sys
from kernelgraph.client import KernelGraphClient
from kernelgraph.core.signature import SIGNATURE_DIM, source_dimensions
timing = source_dimensions("cpu_timing")  # signature 2: null where cpu_timing measures nothing
client = KernelGraphClient("{url}", "{key}")
client.upsert_targets([{{"name": "cpu-test", "kind": "cpu", "arch": "x86-64-v3", "peak_gflops": 200.0,
                         "peak_gbps": 20.0, "cores": 2, "isa": "x86-64-v3"}}])
measurement = {{"median_ns": 1e6, "iqr_ns": 1e4, "trials": 21, "correct": True, "counter_source": "cpu_timing",
                "counters": {{"time_ns": 1e6}},
                "signature": [0.5 if i in timing else None for i in range(SIGNATURE_DIM)]}}
kernel = {{"task": "matmul", "backend": "c", "patterns": ["dense-matmul"]}}
created = client.record_attempt({{
    "attempt_key": "wheel:0", "run_id": "wheel", "agent": "wheel-test", "target": "cpu-test",
    "parent": {{**kernel, "source": "void kernel(void) {{}}"}}, "parent_measurement": measurement,
    "transform": {{"name": "unroll", "params": {{"factor": 4}}}},
    "child": {{**kernel, "source": "void kernel(void) {{ /* unrolled */ }}"}},
    "child_measurement": {{**measurement, "median_ns": 5e5, "parent_median_ns": 1e6}}, "outcome": "kept",
    "speedup": 2.0,
}}).created
retrieved = [t.transform for t in client.retrieve({{"target": "cpu-test", "signature": [0.5] * SIGNATURE_DIM}}).transforms]
loaded = sorted(m for m in sys.modules if m.startswith(("kernelgraph.service", "neo4j", "torch")))
print(json.dumps({{"created": created, "retrieved": retrieved, "server_modules_loaded": loaded}}))
"""
