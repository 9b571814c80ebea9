"""The confinement every untrusted step runs in: bubblewrap, an unprivileged uid and rlimits.

Code a model wrote is hostile (docs/sandbox.md). Compile, admission, check, profile, counters and the
Triton worker all start their process through `Sandbox.popen`, which wraps the command as

    bwrap <namespaces> <read-only binds> --tmpfs /tmp <scratch bind> --clearenv --setenv ...
          -- setpriv --reuid=<the step's own uid> --regid=65534 ... -- prlimit --nproc=... -- <command>

so the step sees only `/usr` (compiler, binutils, valgrind), the interpreter and the venv (Python
steps), the project's `agent` package (Python steps), the files it was handed read-only and one
scratch directory; it has no network (own network namespace), its own PID namespace (everything it
started dies with it), no capabilities and an environment built from `ENV_ALLOWED` plus the values the
caller sets. rlimits (address space, CPU time, processes, queued signals, file size, open files) are
inherited by everything inside: set before exec, the per-user ones (processes, queued signals) by
`prlimit` inside the sandbox (`Rlimits.inside`).

Paths inside are the same as outside (each bind maps a path to itself), so one command line works
with and without the sandbox. A missing bwrap raises `SandboxUnavailable` with the fix; only
`Sandbox(enabled=False)` (the CLI's `--unsafe-no-sandbox`) runs unconfined, and its `label` says so
in every result it touches.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import random
import resource
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import IO, Any

from kernelgraph import PACKAGE_ROOT
from kernelgraph.agent.backends.seccomp import STEP_FILTER

SANDBOX_UID = 65534  # nobody: owns nothing on the host; every step's group, and its uid without root
# As root each sandboxed step runs as a uid of its own (`step_uid`), in the group SANDBOX_UID (which is
# what may write its scratch directory): the kernel counts threads, pending signals and other
# resources per uid, so steps under one uid read each other's counts and starve each other. The
# sixteenth adversary's kernel told its role in a comparison from how many threads it could start
# beside the other kernel's process (results/redteam-stop54b); a kernel holding every thread of a
# shared uid fails other agents' compiles. Off only in that test's control.
STEP_UIDS = True
# Each step's uid is drawn at random among STEP_UID_CHOICES above 2^30: a process reads its own uid
# without a system call (the auxiliary vector), so the uid must say nothing of the step. Made of the
# evaluator's process id and a count of its steps, it was a clock in steps: the seventeenth
# adversary's kernel ran honest while young and slow once older (results/redteam-stop55). Two of k
# steps alive at once share a uid with probability about k^2 / 2^30.
_STEP_UID_BASE = 1 << 30
STEP_UID_CHOICES = 1 << 29
_draw = random.SystemRandom()
# Files a step makes are its group's to write as well: later steps in the same scratch directory
# (the padded relink appends to the compile's log) run as other uids of that group.
_STEP_UMASK = 0o002


def step_uid() -> int:
    """A uid drawn for one sandboxed step (STEP_UID_CHOICES says why at random)."""
    return _STEP_UID_BASE + _draw.randrange(STEP_UID_CHOICES) if STEP_UIDS else SANDBOX_UID


# Size caps of the writable filesystems: the sandbox's /tmp and the scratch directory (tmpfs, so RAM).
TMP_BYTES = 256 << 20
# A C profile at full size needs ~0.4 GiB (elementwise_chain: 3 input sets, outputs, snapshots).
SCRATCH_BYTES = 2 << 30
UNSAFE_LABEL = "off (--unsafe-no-sandbox)"
INSTALL_FIX = (
    "install bubblewrap (`apt-get install bubblewrap`, which `make install` does), or pass "
    "--unsafe-no-sandbox to run model-written code unconfined (debugging only; recorded in every result)"
)
# Variables the sandboxed step may inherit when the caller does not set them; everything else
# (API keys, KERNELGRAPH_NEO4J_*, HOME, ...) is dropped.
ENV_ALLOWED = ("LANG", "LC_ALL", "TZ")
# Device nodes the GPU path binds (only those that exist): the control node, unified memory and the
# GPUs themselves. Nothing else under /dev beyond bwrap's minimal --dev (null, zero, random, ...).
NVIDIA_DEVICES = ("nvidiactl", "nvidia-uvm", "nvidia-uvm-tools", "nvidia-modeset")


class SandboxUnavailable(RuntimeError):
    """bubblewrap is missing or cannot start: nothing untrusted runs (the message names the fix)."""


# Without root every step is the same user outside its user namespace, and the kernel counts a user's
# threads and queued signals in each namespace up to the host's, checking each level against the limit
# its creator had (ucounts). Set before bwrap makes the namespace, these limits would be checked
# against the count all steps share, so a step could read another's from how many threads it can start
# (the sixteenth adversary's channel; 509 alone against 207 beside a step holding 300). So they are
# raised to the hard limit before bwrap and set inside it (`Rlimits.inside`): each step is held to its
# own count there, and the shared count stays far below the raised limit. As root too (where each step
# is a uid of its own, `step_uid`, so it changes nothing): one way for both.
PRLIMIT = "/usr/bin/prlimit"
LOADER_CACHE = Path("/etc/ld.so.cache")  # the dynamic loader's cache, bound read-only into every step
PER_USER_LIMITS_INSIDE = True  # off only in the control of the test that shows the channel


@dataclass(frozen=True)
class Rlimits:
    """Per-process limits inherited by everything inside the sandbox (`setrlimit` before exec)."""

    address_space_bytes: int = 16 << 30
    cpu_seconds: int = 600
    processes: int = 512  # counted per user, threads too (OpenMP, torch): each step's own (PRLIMIT)
    file_size_bytes: int = 2 << 30
    open_files: int = 1024
    pending_signals: int = 1024  # queued signals, counted per user like processes

    def apply(self, per_user_inside: bool = False) -> None:
        """Set the limits on this process (a forked child before exec); with `per_user_inside`, the
        per-user ones at their hard limits instead (`inside` sets them)."""
        for which, value in (
            (resource.RLIMIT_AS, self.address_space_bytes),
            (resource.RLIMIT_CPU, self.cpu_seconds),
            (resource.RLIMIT_FSIZE, self.file_size_bytes),
            (resource.RLIMIT_NOFILE, self.open_files),
            (resource.RLIMIT_CORE, 0),
        ):
            resource.setrlimit(which, (value, value))
        for which, value in (
            (resource.RLIMIT_NPROC, self.processes),
            (resource.RLIMIT_SIGPENDING, self.pending_signals),
        ):
            hard = resource.getrlimit(which)[1]
            resource.setrlimit(which, (hard, hard) if per_user_inside else (value, value))

    def inside(self) -> list[str]:
        """The command that sets the per-user limits inside the sandbox and runs the step (PRLIMIT)."""
        return [PRLIMIT, f"--nproc={self.processes}:{self.processes}",
                f"--sigpending={self.pending_signals}:{self.pending_signals}", "--"]  # fmt: skip


@dataclass(frozen=True)
class Mount:
    """A host path the step sees at the same path: read-only unless `writable`; `hidden`: an empty,
    read-only folder in its place (over a folder inside another mount)."""

    path: Path
    writable: bool = False
    hidden: bool = False


@dataclass(frozen=True)
class Finished:
    """A sandboxed command that ran to its end (or was killed at its timeout)."""

    returncode: int
    stdout: str
    stderr: str
    timed_out: bool = False


@cache
def _bwrap_version(path: str) -> str:
    try:
        out = subprocess.run([path, "--version"], capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise SandboxUnavailable(f"{path} does not run ({exc}): {INSTALL_FIX}") from exc
    return out.stdout.strip() or "bubblewrap"


SANDBOXED_PACKAGES = ("agent", "core")  # what of KernelGraph a Python step may import


def python_mounts() -> tuple[Mount, ...]:
    """What a Python step needs: the interpreter's prefix, the venv, and of KernelGraph only the
    `kernelgraph` folder with the agent and the shared core. Never the service, the client, the data or
    the rest of a checkout (where kernelgraph/agent and kernelgraph/core link to the top-level folders,
    so the other links lead nowhere inside), nor the commands and experiments that live in
    `kernelgraph/` itself (kernelgraph/cli, kernelgraph/bench: hidden under empty folders)."""
    packages = {PACKAGE_ROOT, *((PACKAGE_ROOT / name).resolve() for name in SANDBOXED_PACKAGES)}
    paths = {Path(sys.base_prefix).resolve(), Path(sys.prefix).resolve(), *packages}
    own = [p for p in sorted(PACKAGE_ROOT.resolve().iterdir()) if p.is_dir() and not p.is_symlink()]
    hidden = [p for p in own if p.name not in SANDBOXED_PACKAGES]
    return (*(Mount(p) for p in sorted(paths)), *(Mount(p, hidden=True) for p in hidden))


def python_executable() -> str:
    """The venv's interpreter by its resolved path (a symlinked venv directory is not bound)."""
    return str(Path(sys.prefix).resolve() / "bin" / Path(sys.executable).name)


def python_path() -> str:
    """PYTHONPATH inside the sandbox: the directory holding the bound `kernelgraph` package."""
    return str(PACKAGE_ROOT.parent)


@dataclass(frozen=True)
class Sandbox:
    """How untrusted steps run. `enabled=False` is the explicit, recorded, debug-only escape hatch."""

    enabled: bool = True
    gpu: bool = False
    # The seccomp filters (agent/backends/seccomp.py); off only to show, in tests, what they stop.
    seccomp: bool = True
    bwrap: str | None = field(default=None, compare=False)

    def _bwrap(self) -> str:
        path = self.bwrap or shutil.which("bwrap")
        if not path:
            raise SandboxUnavailable(f"bubblewrap (`bwrap`) is not installed: {INSTALL_FIX}")
        return path

    @property
    def label(self) -> str:
        """What every result records: the bubblewrap version, or that the sandbox was off."""
        return _bwrap_version(self._bwrap()) if self.enabled else UNSAFE_LABEL

    def check_available(self) -> None:
        """Raise SandboxUnavailable (with the fix) unless bwrap is installed and runs."""
        if self.enabled:
            _bwrap_version(self._bwrap())

    @property
    def per_user_limits_inside(self) -> bool:
        """Whether `command` sets the per-user limits inside the sandbox (`Rlimits.inside`), so the
        limiter before bwrap raises them to their hard limits: one answer for both sides."""
        return self.enabled and PER_USER_LIMITS_INSIDE

    def command(
        self, argv: Sequence[str], *, mounts: Sequence[Mount], env: Mapping[str, str], cwd: Path,
        limits: Rlimits, seccomp_fd: int | None = None,
    ) -> list[str]:  # fmt: skip
        """The full command line: bwrap + setpriv + `limits.inside()` around `argv` (just `argv` when
        disabled; without root bwrap's user namespace instead of setpriv); with `seccomp_fd`, bwrap
        loads the step filter (agent/backends/seccomp.py) from that descriptor."""
        if not self.enabled:
            return list(argv)
        cmd = [
            self._bwrap(),
            *(["--seccomp", str(seccomp_fd)] if seccomp_fd is not None else []),
            "--unshare-ipc",
            "--unshare-pid",
            "--unshare-net",
            "--unshare-uts",
            "--unshare-cgroup-try",
            "--die-with-parent",
            "--new-session",  # no TIOCSTI into a terminal
            "--hostname",
            "kernelgraph-sandbox",
            "--ro-bind",
            "/usr",
            "/usr",
            "--symlink",
            "usr/lib",
            "/lib",
            "--symlink",
            "usr/lib64",
            "/lib64",
            "--symlink",
            "usr/bin",
            "/bin",
            "--symlink",
            "usr/sbin",
            "/sbin",
            "--proc",
            "/proc",
            "--dev",
            "/dev",
            "--perms",
            "1777",
            "--size",
            str(TMP_BYTES),
            "--tmpfs",
            "/tmp",
        ]
        # The loader's cache goes through the same parents rule as every mount: left to bwrap, /etc was
        # 0700 and root's, no step's uid could read the cache, and the loader placed every library 9
        # pages from where root's (or an unconfined) process has it, which put the isolated child of
        # matmul best-A in its slow state in 18 of 20 evaluations, 3 of 20 with the cache read
        # (docs/sandbox.md, "Stop 64").
        loader_cache = [Mount(LOADER_CACHE)] if LOADER_CACHE.exists() else []
        made: set[str] = {"/", "/usr", "/tmp", "/proc", "/dev"}
        for mount in [*loader_cache, *mounts]:
            path = Path(mount.path).resolve()
            for parent in reversed(path.parents):  # bwrap would create missing parents 0700
                if str(parent) not in made:
                    cmd += ["--perms", "0755", "--dir", str(parent)]
                    made.add(str(parent))
            if mount.hidden:
                cmd += ["--perms", "0555", "--size", "4096", "--tmpfs", str(path), "--remount-ro", str(path)]
            else:
                cmd += ["--bind" if mount.writable else "--ro-bind", str(path), str(path)]
            made.add(str(path))
        if self.gpu:
            cmd += self._gpu_binds()
        cmd += ["--chdir", str(cwd), "--clearenv"]
        for key, value in env.items():
            cmd += ["--setenv", key, value]
        inside = limits.inside() if self.per_user_limits_inside else []
        if os.geteuid() != 0:  # unprivileged bwrap: its user namespace maps us to the sandbox uid
            return [*cmd[:1], "--unshare-user", "--uid", str(SANDBOX_UID), "--gid", str(SANDBOX_UID),
                    "--cap-drop", "ALL", *cmd[1:], "--", *inside, *argv]  # fmt: skip
        cmd += [
            "--",
            "/usr/bin/setpriv",
            f"--reuid={step_uid()}",
            f"--regid={SANDBOX_UID}",
            "--clear-groups",
            "--inh-caps=-all",
            "--bounding-set=-all",
            "--no-new-privs",
            "--",
            *inside,
            *argv,
        ]
        return cmd

    def _gpu_binds(self) -> list[str]:
        """The NVIDIA device nodes that exist (docs/sandbox.md lists them); untested without a GPU."""
        binds: list[str] = []
        dev = Path("/dev")
        nodes = sorted(dev.glob("nvidia[0-9]*")) + [dev / n for n in NVIDIA_DEVICES]
        for node in nodes:
            if node.exists():
                binds += ["--dev-bind", str(node), str(node)]
        if Path("/sys").exists():  # the CUDA driver reads PCI topology from sysfs
            binds += ["--ro-bind", "/sys", "/sys"]
        return binds

    def environment(self, values: Mapping[str, str]) -> dict[str, str]:
        """The allow-listed environment: ENV_ALLOWED from ours, then `values`; nothing else."""
        env = {k: os.environ[k] for k in ENV_ALLOWED if k in os.environ}
        env.update(PATH="/usr/bin:/bin", HOME="/tmp", TMPDIR="/tmp")
        env.update(values)
        return env

    def popen(
        self,
        argv: Sequence[str],
        *,
        mounts: Sequence[Mount],
        env: Mapping[str, str],
        cwd: Path,
        limits: Rlimits,
        stdout: IO[bytes] | int | None = subprocess.PIPE,
        stderr: IO[bytes] | int | None = subprocess.PIPE,
        fixed_layout: bool = False,
    ) -> subprocess.Popen[bytes]:
        """Start `argv` confined; `env` is added to the allow-listed base. Its own session and process
        group, so `kill_tree` ends it and (through the PID namespace) everything it started. With
        `fixed_layout`, its address space is not randomised (`_limiter`)."""
        full_env = self.environment(env)
        with _filter_fd(self.enabled and self.seccomp) as seccomp_fd:
            return subprocess.Popen(
                self.command(
                    argv, mounts=mounts, env=full_env, cwd=cwd, limits=limits, seccomp_fd=seccomp_fd
                ),
                stdin=subprocess.DEVNULL,
                stdout=stdout,
                stderr=stderr,
                env=full_env if not self.enabled else {"PATH": "/usr/bin:/bin"},
                cwd=cwd,
                start_new_session=True,
                preexec_fn=_limiter(limits, self.per_user_limits_inside, fixed_layout),
                pass_fds=() if seccomp_fd is None else (seccomp_fd,),
            )

    def run(
        self,
        argv: Sequence[str],
        *,
        mounts: Sequence[Mount],
        env: Mapping[str, str],
        cwd: Path,
        limits: Rlimits,
        timeout_s: float,
    ) -> Finished:
        """Run `argv` confined to completion or its timeout (then killed with all it started)."""
        proc = self.popen(argv, mounts=mounts, env=env, cwd=cwd, limits=limits)
        try:
            out, err = proc.communicate(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            kill_tree(proc)
            out, err = proc.communicate()
            return Finished(-9, _text(out), _text(err), timed_out=True)
        finally:
            kill_tree(proc)
        return Finished(proc.returncode, _text(out), _text(err))


@contextlib.contextmanager
def _filter_fd(wanted: bool) -> Iterator[int | None]:
    """A descriptor holding STEP_FILTER for bwrap's `--seccomp` (bwrap reads it at start)."""
    if not wanted:
        yield None
        return
    fd = os.memfd_create("kg-seccomp", 0)
    try:
        os.write(fd, STEP_FILTER)
        os.lseek(fd, 0, os.SEEK_SET)
        yield fd
    finally:
        os.close(fd)


def _text(data: bytes | None) -> str:
    return (data or b"").decode(errors="replace")


# personality(2)'s ADDR_NO_RANDOMIZE: kept across exec, but not into a program that gains
# privileges (bubblewrap installed setuid or with file capabilities starts its child randomised
# again, which costs comparisons precision, not safety).
ADDR_NO_RANDOMIZE = 0x0040000
_QUERY_PERSONA = 0xFFFFFFFF


def _limiter(limits: Rlimits, per_user_inside: bool, fixed_layout: bool = False) -> Callable[[], None]:
    """What the forked child does before exec; `per_user_inside` is `Sandbox.per_user_limits_inside`
    (the per-user limits raised here, set inside by the command line). A fixed layout is for processes compared with each
    other: where the stack, heap and libraries land moved a cache-sensitive kernel's time by 15% from
    one process to another (isolated.py `Placement`). It defends nothing here: the code run in the
    process is the hostile party, and it reads its own addresses anyway."""
    # looked up here, before the fork
    personality = ctypes.CDLL(None, use_errno=True).personality if fixed_layout else None

    def apply() -> None:  # runs in the forked child before exec: only async-signal-safe work
        limits.apply(per_user_inside)
        os.umask(_STEP_UMASK)
        if personality is not None:
            personality(personality(_QUERY_PERSONA) | ADDR_NO_RANDOMIZE)

    return apply


def kill_tree(proc: subprocess.Popen[Any]) -> None:
    """SIGKILL the process group (bwrap's PID namespace takes everything inside down with it)."""
    if proc.poll() is None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()


class UntrustedFileError(OSError):
    """A file the sandbox left is not a plain file of sane size (a symlink, a fifo, too big)."""


def read_untrusted(path: Path, max_bytes: int = 1 << 30) -> bytes:
    """Read a file a sandboxed step wrote, without following a symlink it may have planted there
    (to make us read, and echo, a secret such as the Neo4j password file)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError as exc:
        raise UntrustedFileError(f"{path.name}: cannot open as a plain file ({exc.strerror})") from None
    with os.fdopen(fd, "rb") as f:
        info = os.fstat(f.fileno())
        if not stat.S_ISREG(info.st_mode):
            raise UntrustedFileError(f"{path.name}: not a regular file")
        if info.st_size > max_bytes:
            raise UntrustedFileError(f"{path.name}: {info.st_size} bytes, over the {max_bytes}-byte limit")
        return f.read(max_bytes)


@contextlib.contextmanager
def scratch_dir(prefix: str, size_bytes: int | None = None, sandbox_writes: bool = True) -> Iterator[Path]:
    """A fresh host directory the sandboxed uid may write: the step's only writable bind. As root it
    is a tmpfs of at most `size_bytes` (SCRATCH_BYTES), so a step cannot fill the host's disk; without
    root only the per-file size limit applies (docs/sandbox.md). With `sandbox_writes` off, a
    directory only the host writes, for a read-only bind (`Mount` not `writable`): as root the
    sandboxed uid is not its owner either; without root (the sandbox runs as the owner) the bind and
    the permission bits the caller leaves keep it so."""
    with tempfile.TemporaryDirectory(prefix=prefix) as tmp:
        path = Path(tmp)
        mounted = os.geteuid() == 0 and _mount_tmpfs(path, size_bytes or SCRATCH_BYTES)
        try:
            if not sandbox_writes:
                path.chmod(0o755)
            elif os.geteuid() == 0:  # the group every step runs in (each has a uid of its own)
                os.chown(path, 0, SANDBOX_UID)
                path.chmod(0o770)
            else:  # not root: setpriv cannot switch uid, so bwrap's own user namespace maps us instead
                path.chmod(0o777)
            yield path
        finally:
            if mounted:
                subprocess.run(["umount", "-l", str(path)], capture_output=True, timeout=30, check=False)


def _mount_tmpfs(path: Path, size_bytes: int) -> bool:
    """Mount a size-capped tmpfs on `path` (root only); False when mounting is not possible here.
    Huge pages where the kernel allows them on tmpfs: the isolated protocol's buffers live in this
    mount, and on 4 KiB pages a streaming kernel over 50 MB ran 10-20% slower than on the huge
    pages numpy's own arrays get (matvec's, docs/sandbox.md#cost)."""
    for options in (f"size={size_bytes},mode=0700,huge=within_size", f"size={size_bytes},mode=0700"):
        try:
            done = subprocess.run(["mount", "-t", "tmpfs", "-o", options, "kg-scratch", str(path)],
                                  capture_output=True, timeout=30, check=False)  # fmt: skip
        except (OSError, subprocess.TimeoutExpired):
            return False
        if done.returncode == 0:
            return True
    return False
