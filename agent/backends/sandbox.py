"""Run an untrusted compiled kernel in a separate, confined process with a time and a memory limit.

The child (`_child.py`) loads the shared object with ctypes inside the bubblewrap sandbox
(agent/backends/bubblewrap.py: no network, no view of the home directory, the data home or the
repository, an unprivileged uid, rlimits); a segfault, an exit() call, a hang, a fork or an
allocation storm ends only the child and everything it started, and comes back as a `RunReport`
status, never an exception.
"""

from __future__ import annotations

import logging
import os
import pickle
import random
import signal
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from kernelgraph.agent.backends._child import (
    RESULT_ARRAYS,
    RESULT_JSON,
    decode_result,
    variant_factors,
    write_variant,
)
from kernelgraph.agent.backends.bubblewrap import (
    Finished,
    Mount,
    Rlimits,
    Sandbox,
    UntrustedFileError,
    kill_tree,
    python_executable,
    python_mounts,
    python_path,
    read_untrusted,
    scratch_dir,
)
from kernelgraph.agent.backends.native import timed_call_library
from kernelgraph.agent.backends.seccomp import KERNEL_FILTER
from kernelgraph.agent.backends.timing import TimingPlan
from kernelgraph.agent.evaluator import OutputSpec, RunReport, RunStatus, compare, conforming, digest
from kernelgraph.agent.results import CheckResult, Outcome
from kernelgraph.agent.tasks.base import Arrays, Task

log = logging.getLogger(__name__)

CHILD = Path(__file__).with_name("_child.py")


@dataclass(frozen=True)
class SandboxLimits:
    timeout_s: float = 20.0
    memory_bytes: int = 4 << 30  # address space the kernel may add on top of the child's own
    threads: int = 1
    sandbox: Sandbox = field(default_factory=Sandbox)

    def rlimits(self) -> Rlimits:
        """The process limits of one run: CPU time covers every thread for the whole timeout."""
        cpu = int(self.timeout_s * max(self.threads, 1)) + 10
        return Rlimits(address_space_bytes=self.memory_bytes + (8 << 30), cpu_seconds=cpu)


def child_env(threads: int) -> dict[str, str]:
    """What the kernel's process may see, on top of the sandbox's allow-listed base."""
    return dict(
        OMP_NUM_THREADS=str(threads),
        # No binding by the runtime: the isolated protocol places a kernel's threads itself, and
        # its filter refuses sched_setaffinity, which a binding libgomp would call (here it binds
        # nothing: the sandbox shows it no CPU topology).
        OMP_PROC_BIND="false",
        OMP_WAIT_POLICY="passive",  # idle OpenMP threads must not spin against the interleaved partner
        OPENBLAS_NUM_THREADS="1",
        MKL_NUM_THREADS="1",
        PYTHONDONTWRITEBYTECODE="1",
    )


def run_python_module(
    sandbox: Sandbox,
    module: str,
    request: Mapping[str, Any],
    directory: Path,
    *,
    env: Mapping[str, str],
    limits: Rlimits,
    timeout_s: float,
    read_only: Sequence[Path] = (),
) -> Finished:
    """Run `python -s -m module REQUEST DIRECTORY` confined: `request` pickled into `directory` (by us,
    for the child: the trusted direction), the one place of this machine the child may write, where
    it leaves its result (`read_child_result`); besides it the child sees the interpreter, the venv
    and the `read_only` paths."""
    path = directory / "request.pkl"
    path.write_bytes(pickle.dumps(request, protocol=5))
    return sandbox.run(
        [python_executable(), "-s", "-m", module, str(path), str(directory)],
        mounts=[Mount(directory, writable=True), *python_mounts(), *(Mount(p) for p in read_only)],
        env={**env, "PYTHONPATH": python_path()},
        cwd=directory,
        limits=limits,
        timeout_s=timeout_s,
    )


def read_child_result(directory: Path) -> Any:
    """The result a sandboxed child left in `directory`, decoded without trusting it: never unpickled,
    never read through a link it planted (UntrustedFileError, ValueError, KeyError or TypeError)."""
    return decode_result(read_untrusted(directory / RESULT_JSON), read_untrusted(directory / RESULT_ARRAYS))


def _signal_name(code: int) -> str:
    try:
        return signal.Signals(-code).name
    except ValueError:
        return f"signal {-code}"


def filter_for(sandbox: Sandbox, program: bytes = KERNEL_FILTER) -> bytes:
    """The seccomp program a kernel's child is given to install on itself (`program`: by default the
    allow-list it installs before loading the kernel), or empty, none, where the sandbox or its
    filters are off (in tests, to show what they stop)."""
    return program if sandbox.enabled and sandbox.seccomp else b""


def run_request(
    request: dict[str, Any], artifacts: Sequence[str], limits: SandboxLimits
) -> tuple[RunStatus, dict[str, Any], str]:
    """Run one request in a fresh sandboxed child; (status, result dict, message).

    The child sees the interpreter, the venv, the `agent` package, `artifacts` (read-only) and one
    scratch directory holding the request and its result; nothing else of this machine.
    """
    with scratch_dir("kg-sandbox-") as tmp:
        req_path = tmp / "request.pkl"  # pickled by us, for the child: the trusted direction
        with req_path.open("wb") as f:
            pickle.dump(
                {**request, "memory_bytes": limits.memory_bytes, "seccomp": filter_for(limits.sandbox)},
                f,
                protocol=5,
            )
        mounts = [Mount(tmp, writable=True), *python_mounts(), *(Mount(Path(a)) for a in artifacts)]
        # The log is read back through our own descriptor: the child may replace the path with a
        # symlink to a secret, and the log's tail goes into the diagnosis.
        with (tmp / "child.log").open("w+b") as logf:
            proc = limits.sandbox.popen(
                [python_executable(), "-I", str(CHILD), str(req_path), str(tmp)],
                mounts=mounts,
                env=child_env(limits.threads),
                cwd=tmp,
                limits=limits.rlimits(),
                stdout=logf,
                stderr=subprocess.STDOUT,
            )
            try:
                code = proc.wait(timeout=limits.timeout_s)
            except subprocess.TimeoutExpired:
                kill_tree(proc)
                return RunStatus.TIMEOUT, {}, f"kernel did not finish within {limits.timeout_s:g} s"
            finally:
                kill_tree(proc)
            logf.seek(max(0, os.fstat(logf.fileno()).st_size - 1500))
            tail = logf.read(1500).decode(errors="replace").strip()
        if code < 0 or code >= 128:  # bwrap reports a killed child as 128 + signal
            return (
                RunStatus.CRASHED,
                {},
                f"kernel process killed by {_signal_name(code if code < 0 else 128 - code)}"
                + (f": {tail}" if tail else ""),
            )
        if not (tmp / RESULT_JSON).exists():
            return (
                RunStatus.CRASHED,
                {},
                f"kernel process exited with status {code} before reporting (exit() or abort in the kernel?)"
                + (f": {tail}" if tail else ""),
            )
        try:
            result = read_child_result(tmp)
        except (UntrustedFileError, ValueError, KeyError, TypeError) as exc:
            return RunStatus.CRASHED, {}, f"the kernel's process left an unreadable result: {exc}"
        if not isinstance(result, dict):
            return RunStatus.CRASHED, {}, "the kernel's process left a malformed result"
        if "error" in result:
            return RunStatus.CRASHED, result, f"kernel could not run: {result['error']}"
        if code != 0:
            return RunStatus.CRASHED, result, f"kernel process exited with status {code} after reporting"
        return RunStatus.OK, result, ""


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
        "timed_call_library": str(timed_call_library()),  # how the child calls a kernel
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
    try:  # the result came from a process running model-written code: check its shape first
        outputs = tuple(
            {s.name: conforming(o, s) for s, o in zip(specs, outs, strict=True)} for outs in result["outputs"]
        )
        digests = tuple(
            dict(zip(inputs.keys(), (str(x) for x in d), strict=True))
            for inputs, d in zip(input_sets, result["input_digests"], strict=True)
        )
    except (KeyError, TypeError, ValueError) as exc:
        return RunReport(RunStatus.CRASHED, message=f"the kernel's process left a malformed result: {exc}")
    return RunReport(status=status, outputs=outputs, input_digests=digests, message=message, extra=result)


class SharedObjectRunner:
    """A `CandidateRunner` for a C shared object exporting `kernel` (the ABI in docs/adding-a-task.md)."""

    def __init__(self, artifact: str, sizes: Sequence[int], limits: SandboxLimits) -> None:
        self.artifact, self.sizes, self.limits = artifact, list(sizes), limits

    def __call__(self, input_sets: Sequence[Arrays], specs: Sequence[OutputSpec]) -> RunReport:
        request = _request("check", [self.artifact], input_sets, specs, self.sizes)
        status, result, message = run_request(
            request, [self.artifact, request["timed_call_library"]], self.limits
        )
        return _report(status, result, message, input_sets, specs)

    def time(
        self,
        input_sets: Sequence[Arrays],
        specs: Sequence[OutputSpec],
        plan: TimingPlan,
        parent: str | None = None,
    ) -> RunReport:
        """Time this kernel (and `parent`, interleaved), each call on its own variant of input set 0,
        then verify on every set.

        `extra["times"]` holds per-kernel lists of nanoseconds: [candidate, parent?];
        `extra["timed_calls"]` the kept outputs of sampled timed calls (see `verify_timed_calls`),
        `extra["variant_seed"]` the seed of the variants.
        """
        artifacts = [self.artifact] + ([parent] if parent else [])
        request = _request("time", artifacts, input_sets, specs, self.sizes)
        # Drawn here, per run: the kernel cannot know in advance which calls are checked.
        draw = random.SystemRandom()
        calls = range(plan.warmup, plan.warmup + plan.min_trials)
        request.update(
            plan.request(),
            variant_seed=draw.randrange(1 << 31),
            sampled_calls=sorted(draw.sample(calls, min(plan.verified_calls, len(calls)))),
            flush_library=plan.cold_state_library(),
        )
        status, result, message = run_request(
            request, [*artifacts, request["timed_call_library"]], self.limits
        )
        if status is RunStatus.OK:  # ours, not the child's: which variants and which calls to check
            result = {
                **result,
                "variant_seed": request["variant_seed"],
                "calls": plan.warmup + plan.max_trials,
                "sampled_calls": request["sampled_calls"],
            }
        return _report(status, result, message, input_sets, specs)


def verify_timed_calls(task: Task, base: Arrays, extra: Mapping[str, Any]) -> CheckResult:
    """Check the kept outputs of timed calls against the reference of each call's own input variant.

    A kernel that is right when verified but returns something else while timed (a cache keyed on
    pointers, shapes or a few values; a call counter) fails here, on the calls that were measured.
    """
    kept: Mapping[int, Mapping[str, Any]] = extra.get("timed_calls", {})
    if not kept or sorted(kept) != sorted(extra["sampled_calls"]):
        return CheckResult(
            Outcome.CRASHED, "the timing run did not keep the timed calls drawn for verification"
        )
    try:
        return _verify_timed_calls(task, base, extra, kept)
    except (KeyError, TypeError, ValueError) as exc:  # the snapshots came from the kernel's process
        return CheckResult(Outcome.CRASHED, f"the timed outputs are malformed: {exc}")


def _verify_timed_calls(
    task: Task, base: Arrays, extra: Mapping[str, Any], kept: Mapping[int, Mapping[str, Any]]
) -> CheckResult:
    size = max(a.size for a in base.values())
    factors = variant_factors(size, int(extra["calls"]), int(extra["variant_seed"]))
    worst = 0.0
    for call, snapshot in sorted(kept.items()):
        inputs = {}
        for name, array in base.items():
            variant = np.empty_like(array)
            write_variant(array, factors, call, variant)
            inputs[name] = variant
        after = dict(zip(inputs, snapshot["digests"], strict=True))
        changed = [n for n, a in inputs.items() if digest(a) != after[n]]
        if changed:
            return CheckResult(
                Outcome.INCORRECT, f"timed call {call}: the kernel modified input(s) {', '.join(changed)}"
            )
        expected = task.reference(inputs)
        shapes = task.output_shapes(base)
        outputs = dict(zip(shapes, snapshot["outputs"], strict=True))
        for name, out in outputs.items():
            spec = OutputSpec(name, tuple(int(d) for d in shapes[name]), task.output_dtype(name))
            conforming(out, spec)
        for name, want in expected.items():
            ok, reason, err = compare(task, name, np.asarray(outputs[name]), np.asarray(want), inputs)
            if not ok:
                return CheckResult(Outcome.INCORRECT, f"timed call {call}: {reason}")
            worst = max(worst, err)
    return CheckResult(Outcome.KEPT, f"the outputs of {len(kept)} timed calls are correct", worst)
