"""The sandbox itself (agent/backends/bubblewrap.py): identity, view, environment, limits, cleanup."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from kernelgraph.agent.backends.bubblewrap import (
    SANDBOX_UID,
    UNSAFE_LABEL,
    Mount,
    Rlimits,
    Sandbox,
    SandboxUnavailable,
    scratch_dir,
)
from kernelgraph.agent.backends.c import CBackend
from kernelgraph.agent.targets import Target
from kernelgraph.agent.tasks import get_task

SECRET = "kg-bubblewrap-test-secret"


def _sh(
    script: str, sandbox: Sandbox | None = None, timeout_s: float = 20.0, **limits: int
) -> tuple[int, str, bool]:
    with scratch_dir("kg-bwtest-") as work:
        done = (sandbox or Sandbox()).run(["/bin/sh", "-c", script], mounts=[Mount(work, writable=True)], env={},
                                          cwd=work, limits=Rlimits(**limits), timeout_s=timeout_s)  # fmt: skip
    return done.returncode, done.stdout + done.stderr, done.timed_out


def test_each_step_runs_as_a_uid_of_its_own_without_capabilities() -> None:
    """As root, each step's uid is its own (per-uid counts, threads first, are then the step's own:
    `bubblewrap.STEP_UIDS`), none the host's, in the group SANDBOX_UID; without root, bubblewrap's user
    namespace maps the user to SANDBOX_UID."""
    uids = set()
    for _ in range(3):
        code, out, _ = _sh("id -u; id -g; grep CapEff /proc/self/status")
        assert code == 0, out
        uid, gid = (int(v) for v in out.splitlines()[:2])
        assert gid == SANDBOX_UID and "CapEff:\t0000000000000000" in out, out
        uids.add(uid)
    if os.geteuid() == 0:
        assert len(uids) == 3 and min(uids) >= 1 << 30, uids
    else:
        assert uids == {SANDBOX_UID}


def test_sees_no_home_data_home_or_secret_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "secret").write_text(SECRET)
    monkeypatch.setenv("KERNELGRAPH_NEO4J_PASSWORD", SECRET)
    monkeypatch.setenv("ANTHROPIC_API_KEY", SECRET)
    _, out, _ = _sh(f"env; cat {tmp_path}/secret; ls /root/.local /work 2>&1; cat /etc/passwd 2>&1")
    assert SECRET not in out
    assert "No such file or directory" in out
    assert "KERNELGRAPH" not in out


def test_rlimits_apply_inside() -> None:
    code, out, _ = _sh("cat /proc/self/limits", processes=77, open_files=99, file_size_bytes=1 << 20)
    assert code == 0, out
    limits = {line[:26].strip(): line[26:].split()[0] for line in out.splitlines()[1:]}
    assert limits["Max processes"] == "77"
    assert limits["Max open files"] == "99"
    assert limits["Max file size"] == str(1 << 20)


def test_timeout_kills_everything_it_started() -> None:
    tag = "61.2345"  # a sleep duration nothing else on the machine uses: found in /proc/*/cmdline
    started = time.monotonic()
    _, _, timed_out = _sh(f"sleep {tag} & setsid sleep {tag} & wait", timeout_s=1)
    assert timed_out and time.monotonic() - started < 10
    time.sleep(0.3)
    survivors = [p for p in Path("/proc").glob("[0-9]*/cmdline") if tag.encode() in _read(p)]
    assert not survivors


def _read(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except OSError:
        return b""


def test_missing_bubblewrap_fails_loudly_with_the_fix(monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
                                                      cpu_target: Target) -> None:  # fmt: skip
    monkeypatch.setenv("PATH", str(tmp_path))  # no bwrap on PATH
    with pytest.raises(SandboxUnavailable, match="apt-get install bubblewrap"):
        Sandbox().check_available()
    backend = CBackend(cache_dir=tmp_path / "cache", counters=False)
    with pytest.raises(SandboxUnavailable, match="--unsafe-no-sandbox"):  # never silently unconfined
        backend.compile(get_task("rmsnorm"), "void kernel(void) {}", cpu_target)


def test_unsafe_mode_says_so() -> None:
    assert Sandbox(enabled=False).label == UNSAFE_LABEL
    assert Sandbox().label.startswith("bubblewrap")


def test_a_python_step_sees_only_the_agent_and_the_shared_core_of_kernelgraph() -> None:
    """The kernelgraph folder is bound for the agent and core it links; the commands and experiments
    living in it, and the service behind its other links, are not readable inside."""
    from kernelgraph import PACKAGE_ROOT
    from kernelgraph.agent.backends.bubblewrap import python_executable, python_mounts, python_path

    probe = (
        "import importlib, os, sys\n"
        "import kernelgraph.agent.evaluator, kernelgraph.core.models\n"
        f"root = {str(PACKAGE_ROOT)!r}\n"
        "for name in ('cli', 'bench', 'service', 'client'):\n"
        "    path = os.path.join(root, name)\n"
        "    print(name, sorted(os.listdir(path)) if os.path.isdir(path) else 'absent')\n"
        "for module in ('kernelgraph.cli.agent', 'kernelgraph.bench.demo', 'kernelgraph.service.knowledge'):\n"
        "    try:\n"
        "        importlib.import_module(module)\n"
        "        print(module, 'imported')\n"
        "    except ImportError:\n"
        "        print(module, 'refused')\n"
    )
    with scratch_dir("kg-bwtest-") as work:
        done = Sandbox().run([python_executable(), "-c", probe], mounts=[Mount(work, writable=True), *python_mounts()],
                             env={"PYTHONPATH": python_path()}, cwd=work, limits=Rlimits(), timeout_s=60)  # fmt: skip
    out = done.stdout + done.stderr
    assert done.returncode == 0, out
    assert "cli []" in out and "bench []" in out, out
    assert "service absent" in out and "client absent" in out, out
    assert out.count("refused") == 3 and "imported" not in out, out
