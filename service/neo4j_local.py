"""A real Neo4j 5.26 Community server without Docker: jars from Maven Central, Neo4j's own launcher.

Layout under <data_home>/neo4j: lib/ (jars, fetched by Maven from docker/neo4j/pom.xml), conf/,
data/, logs/, run/, import/, plugins/, password (0600). See docs/operations.md.
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
import secrets
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from kernelgraph import resource
from kernelgraph.core.errors import LocalServerError
from kernelgraph.core.settings import Settings

log = logging.getLogger(__name__)

POM = resource("docker", "neo4j", "pom.xml")
DEPENDENCY_PLUGIN = "org.apache.maven.plugins:maven-dependency-plugin:3.8.1"
LAUNCHER = "org.neo4j.server.startup.Neo4jCommand"
ADMIN = "org.neo4j.server.startup.Neo4jAdminCommand"
JVM_FLAGS = (
    "-XX:+UseG1GC",
    "-XX:-OmitStackTraceInFastThrow",
    "-XX:+UnlockExperimentalVMOptions",
    "-XX:+TrustFinalNonStaticFields",
    "-XX:+DisableExplicitGC",
    "-Djdk.nio.maxCachedBufferSize=1024",
    "-Dio.netty.tryReflectionSetAccessible=true",
    # Without the java.nio opening, vector-index population stalls near 99.8%.
    "--add-opens=java.base/java.nio=ALL-UNNAMED",
    "--add-opens=java.base/java.io=ALL-UNNAMED",
    "--add-opens=java.base/sun.nio.ch=ALL-UNNAMED",
    "--enable-native-access=ALL-UNNAMED",
    "-Dlog4j2.disable.jmx=true",
)
# Lucene merges a vector index's segments once this many of one size exist (Neo4j's default: 50). A
# search visits every segment, so after a burst of writes the many small segments made retrieval about
# 3 ms slower at p50 at 10^5 measurements; at 4, what the extra merging costs ingestion stayed within
# this machine's run-to-run spread (docs/scaling.md, "Vector index segments"). An internal setting:
# present in 5.26, not promised by Neo4j beyond it.
VECTOR_INDEX_MERGE_FACTOR = 4
# Seconds each of Bolt's two event-loop groups waits for new work once its server is stopping (Neo4j's
# default: 5). The databases are already stopped then and no connection is left, so a stop waited 10 s
# for nothing: the most of every `neo4j stop`, `dump` and test server's teardown (0.8 s without it). An
# internal setting, as the one above.
BOLT_SHUTDOWN_QUIET_SECONDS = 0


def pom_version() -> str:
    """The exact Neo4j release pinned in docker/neo4j/pom.xml."""
    match = re.search(r"<neo4j.version>([^<]+)</neo4j.version>", POM.read_text())
    if match is None:
        raise LocalServerError(f"no <neo4j.version> in {POM}")
    return match.group(1)


@dataclass(frozen=True)
class ServerStatus:
    installed: bool
    running: bool
    pid: int | None
    bolt_uri: str
    browser_url: str
    home: Path


class LocalNeo4j:
    """Install, start, stop and inspect the local server described by `settings`."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.home = settings.neo4j_home
        # Jars are shared by every data home (the user's server and throw-away test servers alike).
        self.lib = settings.cache_path / f"neo4j-{pom_version()}" / "lib"
        self.conf = self.home / "conf"
        self.pid_file = self.home / "run" / "kernelgraph-launcher.pid"
        self.password_file = self.home / "password"

    # ---- paths and addresses -------------------------------------------------------------------
    @property
    def bolt_uri(self) -> str:
        return f"bolt://127.0.0.1:{self.settings.bolt_port}"

    @property
    def browser_url(self) -> str:
        return f"http://127.0.0.1:{self.settings.http_port}/browser/?connectURL={self.bolt_uri}"

    @property
    def installed(self) -> bool:
        return (self.lib / ".complete").exists()

    # ---- install ---------------------------------------------------------------------------------
    def check_java(self) -> str:
        java = shutil.which("java")
        if java is None:
            raise LocalServerError(
                "Java not found: Neo4j 5.26 needs Java 17 or 21 "
                "(fix: apt-get install -y openjdk-17-jre-headless, or put java on PATH)"
            )
        out = subprocess.run([java, "-version"], capture_output=True, text=True, check=False).stderr
        first = out.splitlines()[0] if out else ""
        if '"17' not in first and '"21' not in first:
            raise LocalServerError(
                f"Neo4j 5.26 needs Java 17 or 21, found: {first} (fix: install openjdk-17)"
            )
        return first

    def install(self) -> None:
        """Fetch the server's jars from Maven Central into lib/ (idempotent; cached after the first time)."""
        self.check_java()
        if self.installed:
            return
        mvn = shutil.which("mvn")
        if mvn is None:
            raise LocalServerError(
                "Maven not found: it fetches the Neo4j jars (fix: apt-get install -y maven)"
            )
        staging = self.lib.with_name("lib.partial")
        shutil.rmtree(staging, ignore_errors=True)
        staging.mkdir(parents=True)
        cmd = [
            mvn, "-q", "-B", "-f", str(POM),
            f"{DEPENDENCY_PLUGIN}:copy-dependencies",
            "-DincludeScope=runtime", "-Dmdep.prependGroupId=true", f"-DoutputDirectory={staging}",
        ]  # fmt: skip
        result = subprocess.run(cmd, capture_output=True, text=True, check=False)
        if result.returncode != 0:
            tail = (result.stdout + result.stderr).strip().splitlines()[-5:]
            raise LocalServerError(
                "downloading the Neo4j jars from Maven Central failed: "
                + " | ".join(tail)
                + " (fix: check network access to Maven Central, then rerun `kernelgraph neo4j install`)"
            )
        (staging / ".complete").write_text("ok\n")
        shutil.rmtree(self.lib, ignore_errors=True)
        staging.rename(self.lib)

    # ---- configuration ---------------------------------------------------------------------------
    def write_conf(self) -> None:
        s = self.settings
        for sub in ("conf", "data", "logs", "run", "import", "plugins"):
            (self.home / sub).mkdir(parents=True, exist_ok=True)
        lines = [
            "# Written by `kernelgraph neo4j start`; edits are overwritten. Settings come from KERNELGRAPH_*.",
            "server.default_listen_address=127.0.0.1",
            "server.default_advertised_address=127.0.0.1",
            f"server.bolt.listen_address=127.0.0.1:{s.bolt_port}",
            f"server.bolt.advertised_address=127.0.0.1:{s.bolt_port}",
            f"server.http.listen_address=127.0.0.1:{s.http_port}",
            f"server.http.advertised_address=127.0.0.1:{s.http_port}",
            "server.https.enabled=false",
            "dbms.security.auth_enabled=true",
            "server.memory.heap.initial_size=512m",
            f"server.memory.heap.max_size={s.neo4j_heap}",
            f"server.memory.pagecache.size={s.neo4j_pagecache}",
            "dbms.usage_report.enabled=false",
            "db.tx_log.rotation.retention_policy=1 files",
            f"server.directories.data={self.home / 'data'}",
            f"server.directories.logs={self.home / 'logs'}",
            f"server.directories.run={self.home / 'run'}",
            f"server.directories.import={self.home / 'import'}",
            f"server.directories.plugins={self.home / 'plugins'}",
            f"server.directories.lib={self.lib}",
            f"internal.dbms.index.vector.standard_merge_factor={VECTOR_INDEX_MERGE_FACTOR}",
            f"internal.dbms.bolt.netty_server_shutdown_quiet_period={BOLT_SHUTDOWN_QUIET_SECONDS}",
            *(f"server.jvm.additional={flag}" for flag in JVM_FLAGS),
        ]
        (self.conf / "neo4j.conf").write_text("\n".join(lines) + "\n")

    def _env(self) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if k not in ("JAVA_OPTS", "HEAP_SIZE")}
        env["NEO4J_HOME"] = str(self.home)
        env["NEO4J_CONF"] = str(self.conf)
        return env

    def _java(self, main_class: str, *args: str) -> list[str]:
        return ["java", "-cp", f"{self.lib}/*", main_class, *args]

    def ensure_password(self) -> str:
        """Set a random initial password before the first start and keep it in a 0600 file."""
        if self.password_file.exists():
            return self.password_file.read_text().strip()
        # Hex, never url-safe base64: a password starting with "-" is read by neo4j-admin as an option.
        password = secrets.token_hex(16)
        result = subprocess.run(
            self._java(ADMIN, "dbms", "set-initial-password", password),
            capture_output=True, text=True, env=self._env(), check=False,
        )  # fmt: skip
        if result.returncode != 0:
            raise LocalServerError(
                f"setting the initial Neo4j password failed: {result.stderr.strip()[-400:]}"
            )
        fd = os.open(self.password_file, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as handle:
            handle.write(password + "\n")
        return password

    # ---- lifecycle -------------------------------------------------------------------------------
    def _pid(self) -> int | None:
        try:
            pid = int(self.pid_file.read_text().strip())
        except (OSError, ValueError):
            return None
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return None
        return pid

    def status(self) -> ServerStatus:
        pid = self._pid()
        return ServerStatus(self.installed, pid is not None, pid, self.bolt_uri, self.browser_url, self.home)

    def _port_busy(self, port: int) -> bool:
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
            sock.settimeout(0.3)
            return sock.connect_ex(("127.0.0.1", port)) == 0

    def start(self, timeout_s: float = 120.0) -> ServerStatus:
        """Start the server if it is not running and wait until Bolt answers (idempotent)."""
        current = self.status()
        if current.running:
            self._wait_ready(timeout_s)
            return current
        self.install()
        self.write_conf()
        for stale in (self.pid_file, self.home / "run" / "neo4j.pid"):
            stale.unlink(missing_ok=True)  # the process behind it is gone (checked above)
        for port, name in ((self.settings.bolt_port, "bolt"), (self.settings.http_port, "http")):
            if self._port_busy(port):
                raise LocalServerError(
                    f"port {port} ({name}) is already in use by another process "
                    f"(fix: stop it, or set KERNELGRAPH_{name.upper()}_PORT to a free port)"
                )
        self.ensure_password()
        console = open(self.home / "logs" / "console.log", "ab")  # noqa: SIM115 (handed to the child)
        process = subprocess.Popen(
            self._java(LAUNCHER, "console"),
            cwd=self.home, env=self._env(), stdout=console, stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL, start_new_session=True,
        )  # fmt: skip
        console.close()
        self.pid_file.write_text(f"{process.pid}\n")
        try:
            self._wait_ready(timeout_s, process)
        except LocalServerError:
            self.stop()
            raise
        return self.status()

    def _wait_ready(self, timeout_s: float, process: subprocess.Popen[bytes] | None = None) -> None:
        from neo4j import GraphDatabase
        from neo4j.exceptions import AuthError, ServiceUnavailable, SessionExpired

        password = self.password_file.read_text().strip()
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if process is not None and process.poll() is not None:
                raise LocalServerError(
                    f"Neo4j exited with code {process.returncode} while starting:\n{self.log_tail()}"
                )
            try:
                with GraphDatabase.driver(self.bolt_uri, auth=(self.settings.neo4j_user, password)) as driver:
                    driver.verify_connectivity()
                    return
            except AuthError as exc:
                raise LocalServerError(
                    f"Neo4j rejected the password in {self.password_file}: {exc.message} "
                    "(fix: stop the server and remove the data home to start afresh)"
                ) from None
            # A server still starting may take the connection and reset it after the handshake
            # (SessionExpired): not an answer yet, like a refused connection.
            except (ServiceUnavailable, SessionExpired, OSError):
                time.sleep(0.5)
        raise LocalServerError(
            f"Neo4j did not answer on {self.bolt_uri} within {timeout_s:.0f} s:\n{self.log_tail()}"
        )

    def stop(self, timeout_s: float = 60.0) -> bool:
        """Stop the server cleanly (SIGTERM to the launcher); True if one was running."""
        pid = self._pid()
        if pid is None:
            self.pid_file.unlink(missing_ok=True)
            return False
        os.killpg(pid, signal.SIGTERM)
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            try:
                os.killpg(pid, 0)
            except ProcessLookupError:
                break
            _reap(pid)
            time.sleep(0.2)
        else:
            os.killpg(pid, signal.SIGKILL)
        self.pid_file.unlink(missing_ok=True)
        (self.home / "run" / "neo4j.pid").unlink(missing_ok=True)
        return True

    # ---- backup and upgrade ------------------------------------------------------------------------
    def dump(self, destination: Path) -> Path:
        """Write the graph database to `destination` (a .dump file) with `neo4j-admin database dump`.

        Community edition dumps offline only: a running server is stopped for the dump and started
        again afterwards. Returns the dump file."""
        destination = destination.expanduser().resolve()
        if destination.is_dir():
            destination = destination / f"{self.settings.neo4j_database}.dump"
        destination.parent.mkdir(parents=True, exist_ok=True)
        with self._offline(), _tempdir(destination.parent) as staging:
            self._admin("dump", f"--to-path={staging}")
            shutil.move(staging / f"{self.settings.neo4j_database}.dump", destination)
        return destination

    def load(self, dump_file: Path) -> None:
        """Replace the graph database with `dump_file` (from `dump`), then apply nothing else: run
        `kernelgraph schema apply` afterwards to bring a graph of an older release up to date."""
        dump_file = dump_file.expanduser().resolve()
        if not dump_file.is_file():
            raise LocalServerError(f"no dump file at {dump_file}", field="dump_file")
        self.install()
        self.write_conf()
        with self._offline(), _tempdir(dump_file.parent) as staging:
            # neo4j-admin reads <database>.dump from a directory.
            os.symlink(dump_file, staging / f"{self.settings.neo4j_database}.dump")
            self._admin("load", f"--from-path={staging}", "--overwrite-destination=true")

    @contextlib.contextmanager
    def _offline(self) -> Iterator[None]:
        was_running = self.status().running
        if was_running:
            log.info("stopping Neo4j for an offline dump/load")
            self.stop()
        try:
            yield
        finally:
            if was_running:
                self.start()

    def _admin(self, action: str, *args: str) -> None:
        if not self.password_file.exists():
            self.ensure_password()  # a fresh data home: the server needs its password before first start
        result = subprocess.run(
            self._java(ADMIN, "database", action, self.settings.neo4j_database, *args),
            capture_output=True, text=True, env=self._env(), check=False, cwd=self.home,
        )  # fmt: skip
        if result.returncode != 0:
            raise LocalServerError(
                f"neo4j-admin database {action} failed: {(result.stdout + result.stderr).strip()[-600:]}"
            )

    def log_tail(self, lines: int = 30) -> str:
        chunks = []
        for name in ("console.log", "neo4j.log", "debug.log"):
            path = self.home / "logs" / name
            if path.exists():
                text = path.read_text(errors="replace").splitlines()[-lines:]
                chunks.append(f"--- {path} ---\n" + "\n".join(text))
        return "\n".join(chunks) or f"(no logs under {self.home / 'logs'})"


@contextlib.contextmanager
def _tempdir(near: Path) -> Iterator[Path]:
    """A scratch directory on the same file system as `near`, so the final move is a rename."""
    with tempfile.TemporaryDirectory(dir=near, prefix=".kernelgraph-") as name:
        yield Path(name)


def _reap(pid: int) -> None:
    """Collect the launcher if it is our child, so it does not linger as a zombie."""
    with contextlib.suppress(ChildProcessError):
        os.waitpid(pid, os.WNOHANG)
