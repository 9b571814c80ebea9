"""Run an untrusted compiled kernel in a separate process with a time and a memory limit.

The child (`_child.py`) loads the shared object with ctypes; a segfault, an exit() call, a hang or
an allocation storm ends only the child, and comes back as a `RunReport` status, never an exception.
"""

from __future__ import annotations

import contextlib
import logging
import os
import pickle
import signal
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from kernelgraph.agent.evaluator import OutputSpec, RunReport, RunStatus
from kernelgraph.agent.tasks.base import Arrays

log = logging.getLogger(__name__)

CHILD = Path(__file__).with_name("_child.py")


@dataclass(frozen=True)
class SandboxLimits:
    timeout_s: float = 20.0
    memory_bytes: int = 4 << 30  # address space the kernel may add on top of the child's own
    threads: int = 1


@dataclass(frozen=True)
class TimingPlan:
    warmup: int = 3
    min_trials: int = 20
    max_trials: int = 200
    budget_s: float = 3.0  # stop adding trials past this, once min_trials are done
    target_rel_iqr: float = 0.02  # ... or as soon as the spread is this tight


# Enough for keep decisions and the studies: the 20-trial floor, capped at about a second per pair.
FAST_TIMING = TimingPlan(warmup=2, min_trials=20, max_trials=60, budget_s=1.0)


def child_env(threads: int) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OMP_", "GOMP_", "KMP_"))}
    env.update(
        OMP_NUM_THREADS=str(threads),
        OMP_PROC_BIND="close",
        OMP_PLACES="cores",
        OMP_WAIT_POLICY="passive",  # idle OpenMP threads must not spin against the interleaved partner
        OPENBLAS_NUM_THREADS="1",
        MKL_NUM_THREADS="1",
        PYTHONDONTWRITEBYTECODE="1",
    )
    return env


def _signal_name(code: int) -> str:
    try:
        return signal.Signals(-code).name
    except ValueError:
        return f"signal {-code}"


def run_request(request: dict[str, Any], limits: SandboxLimits) -> tuple[RunStatus, dict[str, Any], str]:
    """Run one request in a fresh child; (status, result dict, message)."""
    with tempfile.TemporaryDirectory(prefix="kg-sandbox-") as tmp:
        req_path, res_path, log_path = (Path(tmp) / n for n in ("request.pkl", "result.pkl", "child.log"))
        with req_path.open("wb") as f:
            pickle.dump({**request, "memory_bytes": limits.memory_bytes}, f, protocol=5)
        with log_path.open("wb") as logf:
            proc = subprocess.Popen(
                [sys.executable, "-I", str(CHILD), str(req_path), str(res_path)],
                stdin=subprocess.DEVNULL,
                stdout=logf,
                stderr=subprocess.STDOUT,
                env=child_env(limits.threads),
                cwd=tmp,
                start_new_session=True,  # its own process group: a timeout kills every thread and child
            )
            try:
                code = proc.wait(timeout=limits.timeout_s)
            except subprocess.TimeoutExpired:
                _kill(proc)
                return RunStatus.TIMEOUT, {}, f"kernel did not finish within {limits.timeout_s:g} s"
            finally:
                _kill(proc)
        tail = log_path.read_bytes()[-1500:].decode(errors="replace").strip()
        if code < 0:
            return (
                RunStatus.CRASHED,
                {},
                f"kernel process killed by {_signal_name(code)}" + (f": {tail}" if tail else ""),
            )
        if not res_path.exists():
            return (
                RunStatus.CRASHED,
                {},
                f"kernel process exited with status {code} before reporting (exit() or abort in the kernel?)"
                + (f": {tail}" if tail else ""),
            )
        with res_path.open("rb") as f:
            result: dict[str, Any] = pickle.load(f)
        if "error" in result:
            return RunStatus.CRASHED, result, f"kernel could not run: {result['error']}"
        if code != 0:
            return RunStatus.CRASHED, result, f"kernel process exited with status {code} after reporting"
        return RunStatus.OK, result, ""


def _kill(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()


def _request(
    mode: str,
    artifacts: Sequence[str],
    input_sets: Sequence[Arrays],
    specs: Sequence[OutputSpec],
    sizes: Sequence[int],
) -> dict[str, Any]:
    return {
        "mode": mode,
        "artifacts": list(artifacts),
        "input_sets": [[np.ascontiguousarray(a) for a in s.values()] for s in input_sets],
        "output_specs": [(tuple(s.shape), s.dtype) for s in specs],
        "sizes": [int(v) for v in sizes],
    }


def _report(
    status: RunStatus,
    result: dict[str, Any],
    message: str,
    input_sets: Sequence[Arrays],
    specs: Sequence[OutputSpec],
) -> RunReport:
    if status is not RunStatus.OK:
        return RunReport(status=status, message=message)
    outputs = tuple({s.name: o for s, o in zip(specs, outs, strict=True)} for outs in result["outputs"])
    digests = tuple(
        dict(zip(inputs.keys(), d, strict=True))
        for inputs, d in zip(input_sets, result["input_digests"], strict=True)
    )
    return RunReport(status=status, outputs=outputs, input_digests=digests, message=message, extra=result)


class SharedObjectRunner:
    """A `CandidateRunner` for a C shared object exporting `kernel` (the ABI in docs/adding-a-task.md)."""

    def __init__(self, artifact: str, sizes: Sequence[int], limits: SandboxLimits) -> None:
        self.artifact, self.sizes, self.limits = artifact, list(sizes), limits

    def __call__(self, input_sets: Sequence[Arrays], specs: Sequence[OutputSpec]) -> RunReport:
        status, result, message = run_request(
            _request("check", [self.artifact], input_sets, specs, self.sizes), self.limits
        )
        return _report(status, result, message, input_sets, specs)

    def time(
        self,
        input_sets: Sequence[Arrays],
        specs: Sequence[OutputSpec],
        plan: TimingPlan,
        parent: str | None = None,
    ) -> RunReport:
        """Time this kernel (and `parent`, interleaved) on input set 0, then verify on every set.

        `extra["times"]` holds per-kernel lists of nanoseconds: [candidate, parent?].
        """
        artifacts = [self.artifact] + ([parent] if parent else [])
        request = _request("time", artifacts, input_sets, specs, self.sizes)
        request.update(
            warmup=plan.warmup,
            min_trials=plan.min_trials,
            max_trials=plan.max_trials,
            budget_s=plan.budget_s,
            target_rel_iqr=plan.target_rel_iqr,
        )
        status, result, message = run_request(request, self.limits)
        return _report(status, result, message, input_sets, specs)
