"""The sandbox itself (agent/backends/bubblewrap.py): identity, view, environment, limits, cleanup."""

from __future__ import annotations

import contextlib
import os
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from kernelgraph.agent.backends import bubblewrap
from kernelgraph.agent.backends.bubblewrap import (
    LOADER_CACHE,
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


def test_a_step_reads_the_loaders_cache_as_root_would() -> None:
    """The step's dynamic loader finds /etc/ld.so.cache readable, so it lays out the libraries as any
    process on the host does. As root, bwrap made /etc 0700 for the cache's bind, and every step's
    own uid was refused it: the loader searched its default paths and placed every library 9 pages
    away (docs/sandbox.md, "Stop 64")."""
    if not LOADER_CACHE.exists():  # Debian, Ubuntu and CI have it
        pytest.skip("this host has no /etc/ld.so.cache, so no step is given one")
    code, out, _ = _sh("stat -c %a /etc && test -r /etc/ld.so.cache && wc -c < /etc/ld.so.cache")
    assert code == 0, out
    mode, size = out.split()[:2]
    assert mode == "755", out  # bwrap's own 0700 also fails here without root (its user namespace owns it)
    assert int(size) == LOADER_CACHE.stat().st_size, out


def test_a_steps_uid_says_nothing_of_when_it_ran() -> None:
    """A process reads its uid without a system call (its auxiliary vector), so a uid made of a count
    of steps told a kernel its age in steps (the seventeenth adversary, results/redteam-stop55): the
    uids of 400 steps in a row are all different and their ranks do not follow the order the steps
    ran in (a count's would, rank correlation 1; random draws give |rho| under 0.3 but once in about
    10^9)."""
    uids = [bubblewrap.step_uid() for _ in range(400)]
    assert len(set(uids)) == len(uids) and min(uids) >= 1 << 30, uids[:5]
    ranks = np.argsort(np.argsort(uids))
    rho = float(np.corrcoef(ranks, np.arange(len(uids)))[0, 1])
    assert abs(rho) < 0.3, rho


# Holds `argv[1]` threads and as many queued real-time signals and waits; with no argument, counts how
# many of each it can start (up to 4096) and prints both.
_PER_USER_PROBE = r"""
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static pthread_mutex_t gate = PTHREAD_MUTEX_INITIALIZER;

static void *wait_at_the_gate(void *unused) {
    (void)unused;
    pthread_mutex_lock(&gate);
    pthread_mutex_unlock(&gate);
    return NULL;
}

int main(int argc, char **argv) {
    int most = argc > 1 ? atoi(argv[1]) : 4096, queued = 0, started = 0;
    sigset_t blocked;
    sigemptyset(&blocked);
    sigaddset(&blocked, SIGRTMIN);
    sigprocmask(SIG_BLOCK, &blocked, NULL);
    union sigval value = {0};
    while (queued < most && sigqueue(getpid(), SIGRTMIN, value) == 0) queued++;
    pthread_mutex_lock(&gate);
    pthread_attr_t small;
    pthread_attr_init(&small);
    pthread_attr_setstacksize(&small, 64 << 10);
    pthread_t thread;
    while (started < most && pthread_create(&thread, &small, wait_at_the_gate, NULL) == 0) started++;
    printf("%d %d\n", started, queued);
    fflush(stdout);
    if (argc > 1) pause();
    return 0;
}
"""
# The user the steps run as when the test runs as root: one that owns no process.
USER_WITHOUT_ROOT = (1 << 30) - 1


@pytest.fixture(scope="module")
def per_user_probe() -> Iterator[Path]:
    with tempfile.TemporaryDirectory(prefix="kg-per-user-") as tmp:
        folder = Path(tmp)
        (folder / "probe.c").write_text(_PER_USER_PROBE)
        subprocess.run(
            ["gcc", "-O1", "-pthread", "-o", str(folder / "probe"), str(folder / "probe.c")], check=True
        )
        folder.chmod(0o755)
        yield folder / "probe"


def _step_without_root(
    argv: list[str], probe: Path, monkeypatch: pytest.MonkeyPatch
) -> subprocess.Popen[bytes]:
    """`argv` started as a sandboxed step of a user without root: as that user where the test runs as
    root (the command and limits `Sandbox.popen` would give such a user, run under setpriv)."""
    limits, mounts = Rlimits(), [Mount(probe.parent)]
    if os.geteuid() != 0:
        return Sandbox(seccomp=False).popen(argv, mounts=mounts, env={}, cwd=Path("/"), limits=limits)
    with monkeypatch.context() as as_a_user:
        as_a_user.setattr(os, "geteuid", lambda: USER_WITHOUT_ROOT)
        sandbox = Sandbox(seccomp=False)
        command = sandbox.command(argv, mounts=mounts, env={}, cwd=Path("/"), limits=limits)
        before_exec = bubblewrap._limiter(limits, sandbox.per_user_limits_inside)
    user = str(USER_WITHOUT_ROOT)
    return subprocess.Popen(["setpriv", f"--reuid={user}", f"--regid={user}", "--clear-groups", *command],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, preexec_fn=before_exec,
                            start_new_session=True)  # fmt: skip


def _until_the_user_has_no_process(deadline_s: float = 10.0) -> None:
    """Where the test runs as root: wait until the earlier steps of USER_WITHOUT_ROOT are gone (a killed
    holder's threads end a little after `kill_tree` returns, and they count against the user)."""
    if os.geteuid() != 0:
        return
    end = time.monotonic() + deadline_s
    while time.monotonic() < end:
        owners = []
        for status in Path("/proc").glob("[0-9]*/status"):
            with contextlib.suppress(OSError):
                owners += [
                    line.split()[1] for line in status.read_text().splitlines() if line.startswith("Uid:")
                ]
        if str(USER_WITHOUT_ROOT) not in owners:
            return
        time.sleep(0.05)
    raise AssertionError(f"processes of uid {USER_WITHOUT_ROOT} still run after {deadline_s} s")


def _counts(step: subprocess.Popen[bytes], then_end: bool = True) -> tuple[int, int]:
    """(threads, queued signals) the probe printed; then the step is ended and reaped, unless it holds
    them for another step to count beside."""
    try:
        line = step.stdout.readline() if step.stdout else b""
        assert line, step.stderr.read() if step.stderr else b""
    finally:
        if then_end:
            bubblewrap.kill_tree(step)
    started, queued = (int(v) for v in line.split())
    return started, queued


@pytest.mark.parametrize("inside", [True, False], ids=["limits-inside", "control-limits-before-bwrap"])
def test_steps_of_a_user_without_root_cannot_count_each_others_threads_or_signals(
    per_user_probe: Path, monkeypatch: pytest.MonkeyPatch, inside: bool
) -> None:
    """Without root each step's user namespace maps the user to SANDBOX_UID, but the kernel counts
    threads and queued signals for the user outside too, which all steps share: limits set before
    bwrap are checked against that count, and a step reads another's from how many it can start (the
    sixteenth adversary's channel, results/redteam-stop54b). Set inside (`Rlimits.inside`), each step
    is held to its own count: the counting step starts as many beside a step holding 300 of each as
    alone. The control sets them before bwrap, as before: it starts 300 fewer."""
    monkeypatch.setattr(bubblewrap, "PER_USER_LIMITS_INSIDE", inside)
    probe = str(per_user_probe)
    _until_the_user_has_no_process()
    alone = _counts(_step_without_root([probe], per_user_probe, monkeypatch))
    holder = _step_without_root([probe, "300"], per_user_probe, monkeypatch)
    try:
        assert _counts(holder, then_end=False) == (300, 300)
        beside = _counts(_step_without_root([probe], per_user_probe, monkeypatch))
    finally:
        bubblewrap.kill_tree(holder)
    limits = Rlimits()
    # what the limits allow less the step's own processes (bwrap's, the probe's) and queued signals
    assert limits.processes - 10 <= alone[0] < limits.processes, alone
    assert limits.pending_signals - 4 <= alone[1] <= limits.pending_signals, alone
    if inside:
        assert beside[0] >= alone[0] - 2 and beside[1] == alone[1], (alone, beside)
    else:
        assert beside[0] <= alone[0] - 290 and beside[1] <= alone[1] - 290, (alone, beside)


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
