"""The yardsticks every kernel is quoted beside: the library call a user would make instead, and the
roofline.

`time_library(task, instance, threads, target)` times the task's declared `LibraryCall` (torch CPU
eager at the same thread count where torch is installed, numpy otherwise) in its own sandboxed
process (agent/backends/_library_child.py), on the inputs the kernels are timed on, by the kernels'
timing protocol, and checks its outputs with the task's own correctness check: a library call that
fails it gets no time and no speedup is quoted against it. `yardsticks` turns a kernel's median time
into its speedups over the naive baseline and over the library, and its roofline fraction against
the target's peaks (agent/targets.py); `fast_p` is KernelBench's share of tasks correct and faster
than the library by more than p.
"""

from __future__ import annotations

import importlib.util
import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np

from kernelgraph.agent.backends.bubblewrap import (
    Rlimits,
    Sandbox,
    UntrustedFileError,
    scratch_dir,
)
from kernelgraph.agent.backends.c import TIMING_SEED  # the seed of the inputs kernels are timed on
from kernelgraph.agent.backends.sandbox import child_env, read_child_result, run_python_module
from kernelgraph.agent.backends.timing import TimingPlan
from kernelgraph.agent.evaluator import (
    DEFAULT_SEEDS,
    RunReport,
    RunStatus,
    conforming,
    digest,
    make_input_sets,
    output_specs,
    verify,
)
from kernelgraph.agent.results import Outcome
from kernelgraph.agent.target import Target
from kernelgraph.agent.tasks.base import Task

CHILD_MODULE = "kernelgraph.agent.backends._library_child"
LIBRARY_TIMEOUT_S = 300.0


@dataclass(frozen=True)
class LibraryTiming:
    """The library call of one task instance, timed: `median_ns` is None when it did not run or
    failed the task's correctness check (`outcome` and `reason` say which)."""

    task: str
    instance: str  # "" = the task's full shape
    library: str  # "torch" | "numpy"
    call: str  # the call in words, from the task's declaration
    threads: int
    outcome: Outcome  # KEPT: correct and timed
    reason: str = ""
    median_ns: float | None = None
    iqr_ns: float | None = None
    trials: int = 0
    versions: Mapping[str, str] = field(default_factory=dict)

    @property
    def label(self) -> str:
        """e.g. "torch 2.5.1, 2 threads" or "numpy 2.4.6 (openblas 0.3.29 Zen threads=2), 2 threads"."""
        version = self.versions.get(self.library, "")
        blas = self.versions.get("openblas") or self.versions.get("mkl") or ""
        extra = f" ({blas.split(' threads=')[0].strip()})" if blas and self.library == "numpy" else ""
        return f"{self.library} {version}{extra}, {self.threads} thread{'s' if self.threads != 1 else ''}".strip()

    def to_json(self) -> dict[str, Any]:
        return {
            "library": self.library,
            "call": self.call,
            "label": self.label,
            "threads": self.threads,
            "outcome": self.outcome.value,
            "reason": self.reason,
            "median_ns": self.median_ns,
            "iqr_ns": self.iqr_ns,
            "trials": self.trials,
            "versions": dict(self.versions),
        }


def torch_installed() -> bool:
    return importlib.util.find_spec("torch") is not None


def library_choice(task: Task) -> str | None:
    """ "torch" where torch is installed and the task declares a torch call, "numpy" otherwise; None
    when the task declares no library call."""
    if task.library is None:
        return None
    return "torch" if task.library.torch is not None and torch_installed() else "numpy"


def library_env(threads: int) -> dict[str, str]:
    """The kernels' process discipline (`child_env`: thread count, placement, passive waiting), with
    BLAS at the same thread count. No OPENBLAS_CORETYPE or the like reaches the sandbox (its
    environment is an allow-list), so OpenBLAS picks its kernel for this CPU itself."""
    n = str(max(1, threads))
    return {
        **child_env(threads),
        "OPENBLAS_NUM_THREADS": n,
        "MKL_NUM_THREADS": n,
    }


def time_library(
    task: Task,
    instance: str | None,
    threads: int,
    target: Target,
    *,
    plan: TimingPlan | None = None,
    sandbox: Sandbox | None = None,
) -> LibraryTiming:
    """Time `task`'s library call at `instance` ("" or None: the task's own shape, or the instance
    `task` was already set to) with `threads` threads, and check it; see the module docstring.

    `target` names where it runs (a CPU target: the library runs on this host's CPU); results are
    kept for the process, per task, instance, threads, target and library, since every kernel of a
    run is quoted beside the same figure.
    """
    if target.kind != "cpu":
        raise ValueError(f"the library baseline runs on the CPU; target {target.name} is {target.kind}")
    chosen = task.at(instance) if instance else task
    library = library_choice(chosen)
    if library is None or chosen.library is None:
        raise ValueError(f"task {task.name!r} declares no library call")
    call = chosen.library.torch_call if library == "torch" else chosen.library.numpy_call
    key = (chosen.name, chosen.instance, library, max(1, threads), target.name, plan or TimingPlan(), sandbox)
    if key not in _TIMED:
        _TIMED[key] = _timed(
            chosen, library, call, max(1, threads), plan or TimingPlan(), sandbox or Sandbox()
        )
    return _TIMED[key]


_TIMED: dict[tuple[Any, ...], LibraryTiming] = {}


def library_for(task: Task, target: Target, plan: TimingPlan | None = None) -> LibraryTiming | None:
    """`task`'s library call at the shape `task` is set to, timed with the target's thread count and
    `plan` (kept for the process, like `time_library`); None where there is none to time (a GPU
    target, a task without a library call)."""
    if target.kind != "cpu" or library_choice(task) is None:
        return None
    return time_library(task, None, target.cores or 1, target, plan=plan)


def _timed(
    task: Task, library: str, call: str, threads: int, plan: TimingPlan, sandbox: Sandbox
) -> LibraryTiming:
    small = make_input_sets(task, DEFAULT_SEEDS, small=True)
    full = make_input_sets(task, (TIMING_SEED, DEFAULT_SEEDS[0]), small=False)
    sets = [*small, *full]
    digests = [{n: digest(a) for n, a in s.items()} for s in sets]
    specs = output_specs(task, small[0]), output_specs(task, full[0])
    request: dict[str, Any] = {
        **plan.request(),
        "task": task.name,
        "library": library,
        "threads": threads,
        "names": list(sets[0]),
        "input_sets": [[np.ascontiguousarray(a) for a in s.values()] for s in sets],
        "timed": len(small),
        "variant_seed": random.SystemRandom().randrange(1 << 31),
        "flush_library": plan.cold_state_library(),
    }
    # One spec list per set: the small and full sets differ in shape.
    request["output_specs"] = [
        [(o.name, o.shape, o.dtype) for o in specs[i >= len(small)]] for i in range(len(sets))
    ]
    timing = LibraryTiming(task.name, task.instance, library, call, threads, Outcome.CRASHED)
    status, result, message = _run(request, threads, sandbox)
    if status is not RunStatus.OK:
        outcome = Outcome.TIMEOUT if status is RunStatus.TIMEOUT else Outcome.CRASHED
        return replace(timing, outcome=outcome, reason=message)
    versions = {str(k): str(v)[:128] for k, v in dict(result.get("versions", {})).items()}
    try:
        reports = [
            _report(result, range(len(small)), specs[0]),
            _report(result, range(len(small), len(sets)), specs[1]),
        ]
    except (KeyError, TypeError, ValueError) as exc:
        return replace(
            timing, reason=f"the library's process left a malformed result: {exc}", versions=versions
        )
    for group, report in zip((small, full), reports, strict=True):
        lo = 0 if group is small else len(small)
        verdict = verify(task, group, report, digests[lo : lo + len(group)])
        if not verdict.correct:
            return replace(timing, outcome=verdict.outcome, versions=versions,
                         reason=f"{library} fails the task's correctness check: {verdict.reason}")  # fmt: skip
    times = np.asarray(result["times"], dtype=float)
    q1, median, q3 = (float(v) for v in np.percentile(times, [25, 50, 75]))
    return replace(timing, outcome=Outcome.KEPT, reason="correct and timed", median_ns=median,
                 iqr_ns=q3 - q1, trials=len(times), versions=versions)  # fmt: skip


def _report(result: Mapping[str, Any], indices: range, specs: Sequence[Any]) -> RunReport:
    outputs = tuple(
        {s.name: conforming(o, s) for s, o in zip(specs, result["outputs"][i], strict=True)} for i in indices
    )
    names = result["names"]
    digests = tuple(
        dict(zip(names, (str(d) for d in result["input_digests"][i]), strict=True)) for i in indices
    )
    return RunReport(RunStatus.OK, outputs=outputs, input_digests=digests)


def _run(request: dict[str, Any], threads: int, sandbox: Sandbox) -> tuple[RunStatus, dict[str, Any], str]:
    """Run the library child in a fresh sandbox; (status, result, message)."""
    with scratch_dir("kg-library-") as tmp:
        done = run_python_module(
            sandbox, CHILD_MODULE, request, tmp, env=library_env(threads),
            limits=Rlimits(cpu_seconds=int(LIBRARY_TIMEOUT_S * threads) + 10), timeout_s=LIBRARY_TIMEOUT_S,
            read_only=[Path(request["flush_library"])] if request["flush_library"] else [],
        )  # fmt: skip
        tail = (done.stderr or done.stdout).strip()[-800:]
        if done.timed_out:
            return RunStatus.TIMEOUT, {}, f"the library call did not finish within {LIBRARY_TIMEOUT_S:g} s"
        try:
            result = read_child_result(tmp)
        except (UntrustedFileError, ValueError, KeyError, TypeError) as exc:
            return (
                RunStatus.CRASHED,
                {},
                f"the library's process left no result (exit {done.returncode}): {exc} {tail}",
            )
        if not isinstance(result, dict):
            return RunStatus.CRASHED, {}, "the library's process left a malformed result"
        if "error" in result:
            return RunStatus.CRASHED, result, f"the library call failed: {result['error']}"
        return RunStatus.OK, result, ""


@dataclass(frozen=True)
class Yardsticks:
    """One kernel time beside the yardsticks: speedups over the naive baseline and over the library
    (None where that was not timed or the library failed its check) and the roofline."""

    median_ns: float
    achieved_gflops: float
    achieved_gbps: float
    roofline_fraction: float | None  # the roofline's least time (Target.attainable_ns) / median_ns
    naive_median_ns: float | None = None
    speedup_vs_naive: float | None = None
    library: str | None = None  # LibraryTiming.label
    library_median_ns: float | None = None
    speedup_vs_library: float | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "median_ns": self.median_ns,
            "speedup_vs_naive": self.speedup_vs_naive,
            "speedup_vs_library": self.speedup_vs_library,
            "library": self.library,
            "library_median_ns": self.library_median_ns,
            "naive_median_ns": self.naive_median_ns,
            "achieved_gflops": self.achieved_gflops,
            "achieved_gbps": self.achieved_gbps,
            "roofline_fraction": self.roofline_fraction,
        }

    def line(self) -> str:
        """The figures in one line, the library first."""
        parts = []
        if self.speedup_vs_library is not None:
            parts.append(f"{self.speedup_vs_library:.2f}x {self.library}")
        else:
            parts.append(f"library {self.library or 'not timed'}: no comparison")
        if self.speedup_vs_naive is not None:
            parts.append(f"{self.speedup_vs_naive:.2f}x naive")
        if self.roofline_fraction is not None:
            parts.append(f"{100 * self.roofline_fraction:.1f}% of roofline")
        parts.append(f"{self.achieved_gflops:.1f} GFLOP/s, {self.achieved_gbps:.1f} GB/s")
        return " · ".join(parts)


_WORK: dict[tuple[str, str], tuple[float, float]] = {}


def work_of(task: Task) -> tuple[float, float]:
    """(FLOPs, compulsory bytes) of one call at the shape `task` is timed at (cached per instance)."""
    key = (task.name, task.instance)
    if key not in _WORK:
        inputs = task.make_inputs(TIMING_SEED, False)
        _WORK[key] = (float(task.flops(inputs)), float(task.bytes_moved(inputs)))
    return _WORK[key]


def yardsticks(
    task: Task,
    median_ns: float,
    target: Target,
    *,
    naive_median_ns: float | None = None,
    library: LibraryTiming | None = None,
) -> Yardsticks:
    """`median_ns` of a kernel of `task` (at the shape it is timed at) beside the naive baseline's
    time, the library's and the roofline of `target`."""
    flops, moved = work_of(task)
    least = target.attainable_ns(flops, moved)
    timed = library is not None and library.median_ns is not None
    library_ns = library.median_ns if library is not None and timed else None
    return Yardsticks(
        median_ns=median_ns,
        achieved_gflops=flops / median_ns,
        achieved_gbps=moved / median_ns,
        roofline_fraction=least / median_ns if least else None,
        naive_median_ns=naive_median_ns,
        speedup_vs_naive=naive_median_ns / median_ns if naive_median_ns else None,
        library=library.label if library is not None and timed else None,
        library_median_ns=library_ns,
        speedup_vs_library=library_ns / median_ns if library_ns else None,
    )


def fast_p(speedups_vs_library: Sequence[float | None], p: float = 1.0) -> float:
    """KernelBench's fast_p over tasks: the share of them whose kernel is correct and faster than the
    library by more than `p` (a speedup > p). None (incorrect, untimed, or no correct library
    figure) counts as not fast; every task counts in the denominator."""
    if not speedups_vs_library:
        return 0.0
    return sum(1 for s in speedups_vs_library if s is not None and s > p) / len(speedups_vs_library)
