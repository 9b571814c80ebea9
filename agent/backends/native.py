"""The evaluator's own C programs, built once per source with gcc into the user's cache.

Each is world-readable (and the programs executable): they are mounted read-only into the
sandboxes that run them.
"""

from __future__ import annotations

import functools
import hashlib
import os
import subprocess
import tempfile
from pathlib import Path

HERE = Path(__file__).parent
SERVE_LOOP_SOURCE = HERE / "serve_loop.c"  # the isolated protocol's child (agent/backends/isolated.py)
TIMED_CALL_SOURCE = HERE / "timed_call.c"  # the cold state and the call of every timed call
KERNEL_CALL_HEADER = HERE / "kernel_call.h"  # how both protocols' children call a kernel


class BuildError(Exception):
    """gcc could not build one of the evaluator's own programs."""


def _built(
    source_path: Path, stem: str, flags: tuple[str, ...], libs: tuple[str, ...] = (), suffix: str = ""
) -> Path:
    source = source_path.read_bytes() + KERNEL_CALL_HEADER.read_bytes()  # what it may include
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "kernelgraph" / stem
    built = cache / f"{stem}-{hashlib.sha256(source + repr((flags, libs)).encode()).hexdigest()[:16]}{suffix}"
    if not built.exists():
        cache.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory(dir=cache) as tmp:
            out = Path(tmp) / built.name
            done = subprocess.run(["gcc", *flags, "-o", str(out), str(source_path), *libs],
                                  capture_output=True, text=True, timeout=60, check=False)  # fmt: skip
            if done.returncode != 0:
                raise BuildError(f"building {source_path.name} failed: {done.stderr[-500:]}")
            out.chmod(0o755)
            os.replace(out, built)
    return built


@functools.cache
def serve_loop_binary() -> Path:
    """The trusted C program the isolated protocol's kernel child is (`serve_loop.c`)."""
    return _built(SERVE_LOOP_SOURCE, "serve-loop", ("-O2", "-pthread"), ("-ldl",))


@functools.cache
def timed_call_library() -> Path:
    """The shared object with `flush_lines` and `call_kernel` (`timed_call.c`), loaded by
    `_child.cache_flusher` and `_child.kernel_caller`."""
    return _built(TIMED_CALL_SOURCE, "timed-call", ("-O2", "-shared", "-fPIC"), suffix=".so")
