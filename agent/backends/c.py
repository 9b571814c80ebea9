"""The C backend: gcc and admission checks in the sandbox into a content-addressed cache, sandboxed
runs, interleaved timing on distinct inputs with the timed outputs verified, cachegrind.

ABI (docs/adding-a-task.md): `void kernel(<inputs as const float*/const int*>, <outputs as float*/int*>,
<int sizes>)`, inputs in `make_inputs` order, outputs in `output_shapes` order, sizes in `sizes` order.
"""

from __future__ import annotations

import hashlib
import logging
import math
import re
import shutil
import subprocess
from collections.abc import Mapping, Sequence
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np

from kernelgraph.agent.backends import admission
from kernelgraph.agent.backends import counters as counters_mod
from kernelgraph.agent.backends.bubblewrap import (
    Mount,
    Rlimits,
    Sandbox,
    UntrustedFileError,
    read_untrusted,
    scratch_dir,
)
from kernelgraph.agent.backends.isolated import time_isolated
from kernelgraph.agent.backends.sandbox import SandboxLimits, SharedObjectRunner, verify_timed_calls
from kernelgraph.agent.backends.timing import ISOLATED, TimingPlan, judge_timing
from kernelgraph.agent.evaluator import (
    DEFAULT_SEEDS,
    EVALUATOR_VERSION,
    REVERIFY_SEEDS,
    RunStatus,
    digest,
    make_input_sets,
    output_specs,
    verify,
)
from kernelgraph.agent.evaluator import (
    check as evaluate,
)
from kernelgraph.agent.results import CheckResult, CompileResult, Diagnostic, Outcome, ProfileResult
from kernelgraph.agent.targets import Target
from kernelgraph.agent.tasks.base import Task
from kernelgraph.core.settings import get_settings
from kernelgraph.core.signature import CounterName, CounterSource

log = logging.getLogger(__name__)

BASE_FLAGS: tuple[str, ...] = ("-O2", "-fPIC", "-shared", "-fopenmp", "-std=gnu11")
COMPILE_TIMEOUT_S = 30.0
# An honest kernel compiles in about a second of CPU and a few hundred MB; these end a source that
# explodes in the preprocessor or optimizer (self-inclusion, huge unrolling) within seconds.
COMPILE_CPU_S = 5
COMPILE_MEMORY_BYTES = 1 << 30
# Compile to kernel.o, list its symbols for admission, then link kernel.so: one sandboxed shell, so
# gcc and nm (which parse model-written input) never run unconfined. Admission reads both objects' bytes.
_BUILD_SCRIPT = """set -u
gcc -fmax-include-depth=24 -fmax-errors=20 "$@" -c kernel.c -o kernel.o 2> compile.log || exit 10
nm kernel.o > nm.txt 2>> compile.log || exit 11
gcc -shared -fopenmp kernel.o -o kernel.so -lm 2>> compile.log || exit 12
nm -D --defined-only kernel.so > exports.txt 2>> compile.log || exit 11
objdump -d --insn-width=16 kernel.so > kernel.so.dis 2>> compile.log || exit 14
"""
# The same objects linked once more behind admission's LAYOUT_PAD, which the script itself writes.
_RELINK_SCRIPT = f"""set -u
rm -f pad.s pad.o kernel.padded.so
cat > pad.s <<'PAD'
{admission.LAYOUT_PAD}PAD
gcc -c pad.s -o pad.o 2>> compile.log || exit 13
gcc -shared -fopenmp pad.o kernel.o -o kernel.padded.so -lm 2>> compile.log || exit 12
objdump -d --insn-width=16 kernel.padded.so > kernel.padded.so.dis 2>> compile.log || exit 14
"""
COMPILE_LIMITS = Rlimits(
    address_space_bytes=COMPILE_MEMORY_BYTES, cpu_seconds=COMPILE_CPU_S, file_size_bytes=256 << 20
)
_DIAG = re.compile(
    r"^(?P<file>[^:\n]+):(?P<line>\d+):(?:(?P<col>\d+):)?\s*(?P<sev>fatal error|error|warning|note):\s*(?P<msg>.*)$",
    re.M,
)
TIMING_SEED = 7
# What gcc prints when its rlimits end it (memory, CPU time).
_COMPILER_LIMIT_HIT = re.compile(r"out of memory|memory exhausted|terminated program|CPU time limit")


def over_compile_limits(what: str) -> str:
    """The diagnosis of a compile that its limits ended."""
    return (
        f"the compiler {what}: a kernel gets {COMPILE_CPU_S} s of compiler CPU, "
        f"{COMPILE_MEMORY_BYTES >> 20} MiB of memory and {COMPILE_TIMEOUT_S:g} s in all; a source that "
        "explodes in the preprocessor or optimizer (self-inclusion, doubling macros, huge unrolling) "
        "does not compile"
    )


@cache
def gcc_version() -> str:
    try:
        out = subprocess.run(["gcc", "--version"], capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.TimeoutExpired):
        return ""
    return out.stdout.splitlines()[0] if out.stdout else ""


def parse_diagnostics(log_text: str) -> tuple[Diagnostic, ...]:
    """gcc's `file:line:col: severity: message` lines as Diagnostics (errors first)."""
    found = [
        Diagnostic(
            message=m["msg"].strip(),
            line=int(m["line"]),
            column=int(m["col"]) if m["col"] else None,
            severity="error" if "error" in m["sev"] else m["sev"],
        )
        for m in _DIAG.finditer(log_text)
    ]
    return tuple(sorted(found, key=lambda d: d.severity != "error"))


class CBackend:
    """Compiles with gcc, runs candidates in spawned sandboxes; see the module docstring for the ABI."""

    name = "c"

    def __init__(
        self,
        *,
        cache_dir: Path | None = None,
        check_timeout_s: float = 20.0,
        profile_timeout_s: float = 180.0,
        memory_bytes: int = 4 << 30,
        timing: TimingPlan | None = None,
        counters: bool = True,
        sandbox: Sandbox | None = None,
    ) -> None:
        self.sandbox = sandbox or Sandbox()
        self.cache_dir = cache_dir
        self.check_timeout_s = check_timeout_s
        self.profile_timeout_s = profile_timeout_s
        self.memory_bytes = memory_bytes
        self.timing = timing or TimingPlan()
        self.counters = counters

    def _cache(self) -> Path:
        return self.cache_dir or get_settings().cache_path / "c"

    def compile_flags(self, target: Target) -> list[str]:
        return [*BASE_FLAGS, *target.cflags]

    def compile(self, task: Task, source: str, target: Target) -> CompileResult:
        """gcc the source into `<cache>/<sha256>/kernel.so` in the sandbox, then admission; errors
        become located Diagnostics. Raises SandboxUnavailable (with the fix) when bwrap is missing."""
        self.sandbox.check_available()
        if target.kind != "cpu":
            return CompileResult(
                False,
                diagnostics=(
                    Diagnostic(f"the C backend cannot build for {target.kind} target {target.name}"),
                ),
            )
        if not target.available:
            return CompileResult(
                False,
                diagnostics=(
                    Diagnostic(f"target {target.name} is unavailable: {target.unavailable_reason}"),
                ),
            )
        if shutil.which("gcc") is None:
            return CompileResult(False, diagnostics=(Diagnostic("gcc not found on PATH"),))
        flags = self.compile_flags(target)
        key_parts = [source, *flags, gcc_version(), f"admission-{admission.ADMISSION_VERSION}"]
        key = hashlib.sha256("\0".join(key_parts).encode()).hexdigest()[:32]
        out_dir = self._cache() / key
        artifact = out_dir / "kernel.so"
        if artifact.exists():  # only admitted builds are cached
            return CompileResult(True, artifact=str(artifact), log="cached")
        with scratch_dir("kg-compile-") as work:
            (work / "kernel.c").write_text(source)
            done = self.sandbox.run(
                ["/bin/sh", "-c", _BUILD_SCRIPT, "build", *(f for f in flags if f != "-shared")],
                mounts=[Mount(work, writable=True)],
                env={},
                cwd=work,
                limits=COMPILE_LIMITS,
                timeout_s=COMPILE_TIMEOUT_S,
            )
            log_text = _read(work / "compile.log")
            if done.timed_out:
                return CompileResult(False, diagnostics=(Diagnostic(over_compile_limits("timed out")),))
            if done.returncode != 0:
                text = log_text or done.stderr
                diags = parse_diagnostics(text) or (Diagnostic(text.strip()[-500:] or "gcc failed"),)
                if _COMPILER_LIMIT_HIT.search(text):
                    diags = (Diagnostic(over_compile_limits("ran out of memory or CPU time")), *diags)
                return CompileResult(False, diagnostics=diags, log=text)
            # Read once: the bytes admitted are the bytes cached and run.
            nm_output, kernel_object, linked, code = (
                _read(work / "nm.txt"),
                _read_bytes(work / "kernel.o"),
                _read_bytes(work / "kernel.so"),
                _read(work / "kernel.so.dis"),
            )
            rejections = self._admit(nm_output, kernel_object, linked, code, target.isa)
            if rejections and all(r.encoding for r in rejections) and self._relink_padded(work):
                # the layout made them: run the clean link
                linked, code = _read_bytes(work / "kernel.padded.so"), _read(work / "kernel.padded.so.dis")
                rejections = self._admit(nm_output, kernel_object, linked, code, target.isa)
            if rejections:
                return CompileResult(
                    False,
                    diagnostics=(Diagnostic(admission.describe(rejections)),),
                    log=log_text,
                    rejected=True,
                )
            if not _exports_kernel(_read(work / "exports.txt")):
                return CompileResult(
                    False,
                    diagnostics=(
                        Diagnostic(
                            "the source does not export `void kernel(...)` (see docs/adding-a-task.md)"
                        ),
                    ),
                    log=log_text,
                )
            out_dir.mkdir(parents=True, exist_ok=True)
            (out_dir / "kernel.c").write_text(source)
            tmp = out_dir / f"kernel.{id(self)}.so.tmp"
            tmp.write_bytes(linked)
            tmp.replace(artifact)
        return CompileResult(
            True, artifact=str(artifact), diagnostics=parse_diagnostics(log_text), log=log_text
        )

    def _relink_padded(self, work: Path) -> bool:
        """Link kernel.o again behind admission.LAYOUT_PAD into kernel.padded.so, in the sandbox."""
        done = self.sandbox.run(["/bin/sh", "-c", _RELINK_SCRIPT, "relink"], mounts=[Mount(work, writable=True)],
                                env={}, cwd=work, limits=COMPILE_LIMITS, timeout_s=COMPILE_TIMEOUT_S)  # fmt: skip
        return not done.timed_out and done.returncode == 0

    def _admit(
        self,
        nm_output: str,
        kernel_object: bytes,
        shared_object: bytes,
        disassembly: str,
        isa: str | None,
    ) -> list[admission.Rejection]:
        """The admission checks on kernel.o and kernel.so (a seam: the red-team tests also run kernels
        past them)."""
        return admission.check_object(nm_output, kernel_object, shared_object, disassembly, isa)

    def _limits(self, target: Target, timeout_s: float) -> SandboxLimits:
        return SandboxLimits(
            timeout_s=timeout_s,
            memory_bytes=self.memory_bytes,
            threads=target.cores or 1,
            sandbox=self.sandbox,
        )

    def check(
        self, task: Task, source: str, target: Target, seeds: Sequence[int] = DEFAULT_SEEDS
    ) -> CheckResult:
        """Correctness on several small input sets in a sandbox (KEPT means correct)."""
        built = self.compile(task, source, target)
        if not built.ok or built.artifact is None:
            return CheckResult(Outcome.REJECTED if built.rejected else Outcome.COMPILE_ERROR, built.diagnosis)
        sizes = list(task.sizes(task.make_inputs(seeds[0], True)).values())
        runner = SharedObjectRunner(built.artifact, sizes, self._limits(target, self.check_timeout_s))
        return evaluate(task, runner, seeds, small=True)

    def profile(
        self, task: Task, source: str, target: Target, parent_source: str | None = None,
        reference_source: str | None = None,
    ) -> ProfileResult:  # fmt: skip
        """Median/IQR over >= 20 interleaved trials at full size, verified, plus cachegrind counters.
        `reference_source` is timed as a third kernel of each round in the isolated protocol, beside a
        parent (the in-process one times two kernels: it is left out there)."""
        built = self.compile(task, source, target)
        if not built.ok or built.artifact is None:
            return self._failed(
                Outcome.REJECTED if built.rejected else Outcome.COMPILE_ERROR, built.diagnosis
            )
        parent_artifact = None
        if parent_source is not None:
            parent_built = self.compile(task, parent_source, target)
            if not parent_built.ok:
                return self._failed(
                    Outcome.COMPILE_ERROR, f"parent does not compile: {parent_built.diagnosis}"
                )
            parent_artifact = parent_built.artifact
        reference_artifact = None
        if reference_source is not None and parent_artifact is not None and self.timing.protocol == ISOLATED:
            reference_built = self.compile(task, reference_source, target)
            if not reference_built.ok:
                return self._failed(
                    Outcome.COMPILE_ERROR, f"the reference does not compile: {reference_built.diagnosis}"
                )
            reference_artifact = reference_built.artifact
        # Set 0 is timed; every set (same buffers, new values) is then verified in the same process.
        sets = make_input_sets(task, (TIMING_SEED, *DEFAULT_SEEDS[:1]), small=False)
        digests = [{n: digest(a) for n, a in s.items()} for s in sets]
        specs = output_specs(task, sets[0])
        sizes = list(task.sizes(sets[0]).values())
        limits = self._limits(target, self.profile_timeout_s)
        copies = [{k: v.copy() for k, v in s.items()} for s in sets]
        artifacts = [built.artifact] + [a for a in (parent_artifact, reference_artifact) if a is not None]
        if self.timing.protocol == ISOLATED:  # every call checked here, as it is timed
            report, timed = time_isolated(task, copies, specs, sizes, self.timing, artifacts, limits)
            if report.status is RunStatus.OK and not timed.correct:
                return self._failed(timed.outcome, f"while timed: {timed.reason}", judged=timed.judged)
        else:
            report = SharedObjectRunner(built.artifact, sizes, limits).time(
                copies, specs, self.timing, parent_artifact
            )
        verdict = verify(task, sets, report, digests)
        if not verdict.correct:
            return self._failed(verdict.outcome, f"during profiling: {verdict.reason}")
        if self.timing.protocol != ISOLATED:
            timed = verify_timed_calls(task, sets[0], report.extra)
            if not timed.correct:
                return self._failed(timed.outcome, f"while timed: {timed.reason}")
        times = report.extra["times"]
        cand = np.asarray(times[0], dtype=float)
        q1, median, q3 = (float(v) for v in np.percentile(cand, [25, 50, 75]))
        parent_median = float(np.median(times[1])) if parent_artifact else None
        pairs = zip(times[0], times[1], strict=True) if parent_artifact else ()
        paired = tuple(float(p) / float(c) for c, p in pairs if c > 0)
        reference_median = float(np.median(times[2])) if reference_artifact else None
        rounds = zip(times[0], times[2], strict=True) if reference_artifact else ()
        referenced = tuple(float(r) / float(c) for c, r in rounds if c > 0)
        # The plausibility checks (beyond the peaks; a speedup past MAX_SPEEDUP re-verified) judge the
        # times the verdict and the graph rest on: judged on the wall times instead, a serial kernel
        # that sleeps inside its calls (no CPU time: its charge) passed them at 2x while kept at 25x
        # (the stop-29 adversary). A serial call's charge is its threads' CPU time, which no wait
        # stretches, so it is never above what the peaks allow its running time.
        plausibility = judge_timing(
            task, sets[0], median, parent_median,
            peak_gflops=target.peak_gflops, peak_gbps=target.max_gbps,
            reverify=lambda: self.check(task, source, target, seeds=REVERIFY_SEEDS),
        )  # fmt: skip
        if plausibility.outcome is not None:
            return self._failed(plausibility.outcome, plausibility.reason)
        cores = limits.threads
        parallel = measured_parallelism(report.extra, cores)
        threads = parallel.get(CounterName.THREADS, 1.0)
        derived = counters_mod.derived_counters(task, sets[0], median, threads, target)
        derived.update(parallel)
        if CounterName.THREADS not in parallel:  # the child could not tell: unmeasured, not 1
            del derived[CounterName.THREADS]
        counter_source, tool_versions = CounterSource.CPU_TIMING, {"gcc": gcc_version()}
        if self.counters:
            # Of the admitted object that was timed, on the very inputs timed, with its threads.
            measured = counters_mod.cachegrind_counters(
                task, built.artifact, sandbox=self.sandbox, inputs=sets[0], threads=int(threads),
                cpu_ns_per_call=parallel.get(CounterName.CPU_TIME_NS),
            )  # fmt: skip
            if measured.incorrect:
                return self._failed(Outcome.INCORRECT, measured.incorrect)
            derived.update(measured.counters)
            counter_source = measured.source
            tool_versions.update(measured.tool_versions)
            if measured.note:
                log.info("%s: %s", task.name, measured.note)
                tool_versions["counter_note"] = measured.note[:128]
        for overhead in (CounterName.CALL_OVERHEAD_NS, CounterName.CALL_WALL_OVERHEAD_NS):
            if overhead.value in report.extra:
                derived[overhead] = float(report.extra[overhead.value])
        derived[CounterName.IQR_NS] = q3 - q1
        derived[CounterName.REL_IQR] = (q3 - q1) / median if median else math.nan
        if plausibility.reverified:
            derived[CounterName.REVERIFIED_SUSPICIOUS] = 1.0
        return ProfileResult(
            median_ns=median,
            iqr_ns=q3 - q1,
            trials=len(cand),
            counters=derived,
            counter_source=counter_source,
            parent_median_ns=parent_median,
            tool_versions=tool_versions,
            reverified=plausibility.reverified,
            reason=plausibility.reason,
            evaluator_version=EVALUATOR_VERSION,
            sandbox=self.sandbox.label,
            paired_ratios=paired,
            reference_median_ns=reference_median,
            reference_ratios=referenced,
        )

    def _failed(self, outcome: Outcome, reason: str, judged: bool = True) -> ProfileResult:
        return ProfileResult(
            median_ns=math.nan,
            iqr_ns=math.nan,
            trials=0,
            counters={},
            counter_source=CounterSource.CPU_TIMING,
            outcome=outcome,
            reason=reason,
            evaluator_version=EVALUATOR_VERSION,
            sandbox=self.sandbox.label,
            judged=judged,
        )


def measured_parallelism(extra: Mapping[str, Any], cores: int) -> dict[str, float]:
    """threads, cpu_time_ns (per call), cpu_utilization and cores of the candidate's timed calls, from
    the child's report (`_child._time`); a value the child did not report is left out (unmeasured).

    cpu_utilization = process CPU time (every thread) / wall time / cores: 1/cores for serial code,
    near 1 when every core worked for the whole call, less for imbalance, serial sections or waiting.
    It can exceed 1: OpenMP's idle workers spin for a while after a parallel call returns, and that CPU
    time falls between the child's CPU-time reads (seen: 1.29 on a loaded 2-core machine); the
    signature clips it to 1.
    """
    out: dict[str, float] = {CounterName.CORES: float(cores)}
    try:
        wall = float(sum(extra["times"][0]))
        cpu = float(extra["cpu_ns"][0])
        calls = len(extra["times"][0])
        if wall > 0 and calls and cpu >= 0 and math.isfinite(cpu):
            out[CounterName.CPU_TIME_NS] = cpu / calls
            out[CounterName.CPU_UTILIZATION] = cpu / wall / max(cores, 1)
    except (KeyError, IndexError, TypeError, ValueError):
        pass
    try:
        used = int(extra["threads_used"])
        if used >= 1:
            out[CounterName.THREADS] = float(used)
    except (KeyError, TypeError, ValueError):
        pass
    return out


def _read(path: Path) -> str:
    """A text file the sandboxed build wrote ("" when absent or not a plain file)."""
    try:
        return read_untrusted(path, max_bytes=64 << 20).decode(errors="replace")
    except UntrustedFileError:
        return ""


def _read_bytes(path: Path) -> bytes:
    """A binary the sandboxed build wrote (b"" when absent or not a plain file: admission rejects it)."""
    try:
        return read_untrusted(path, max_bytes=256 << 20)
    except UntrustedFileError:
        return b""


def _exports_kernel(exports: str) -> bool:
    """True when `nm -D --defined-only` of the shared object lists a symbol `kernel`."""
    return any(line.split()[-1:] == ["kernel"] for line in exports.splitlines())
