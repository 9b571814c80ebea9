"""The honest evaluator shared by every backend: decides whether a candidate's outputs are correct.

It owns the policy (docs in /work/shared/docs/kernel-eval.md); a backend supplies the mechanics as a
`CandidateRunner` that runs the candidate in a sandbox. The runner contract, which defeats the known
harness cheats:
- every input set is copied into the same input buffers (a cache keyed by pointer or shape then
  returns stale data for the next set), and a digest of each input buffer is taken after the run;
- outputs are allocated fresh and NaN-filled (ints: a sentinel) before each run, and copied right
  after the call returns (work left on another thread is not waited for);
- the candidate runs before the reference, in another process, on separate buffers.
The evaluator then compares every set against the numpy reference computed here, from pristine
copies, with the task's dtype-aware tolerance; NaN/inf outputs and mutated inputs are rejected.
"""

from __future__ import annotations

import hashlib
import itertools
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

import numpy as np

from kernelgraph.agent.results import CheckResult, Outcome
from kernelgraph.agent.tasks.base import Arrays, Task, rms_scale
from kernelgraph.core.signature import MAX_COMPUTE_FRACTION

# Bumped whenever what a measurement means changes, so consolidation can tell old from new.
# 1: the evaluator before it was sandboxed (measurements without `evaluator_version`).
# 2: bubblewrap sandbox, admission checks, a distinct input variant per timed call with the timed
#    outputs verified, and times beyond the target's peak an IMPLAUSIBLE outcome.
# 3: the isolated timing protocol (agent/backends/isolated.py): each kernel in its own process,
#    timed and frozen by the evaluator, every timed call checked; keep decisions over an interval;
#    cache counters of the admitted, timed object (never a rebuild: schema 0014 marks the older ones
#    `counters_separate_build`), seccomp and capped filesystems, relative tolerances with an edge set.
# 4: what a call costs beyond the kernel (the hand-over, measured by a stand-in before the kernel is
#    loaded: agent/backends/isolated.py call_overhead) is taken off every timed call.
# 5: the overhead is taken off by the clock a call's time came from: a parallel kernel's wall time
#    loses the latencies a parallel stand-in measured, not only the CPU cost a serial one did.
# 6: the in-process protocol (the study's landscapes, the cost bench, the red-team controls) lays a
#    kernel's arrays out as the isolated one does (agent/backends/_child.py staggered_offsets): numpy's
#    allocations put an input and an output element of one index a multiple of 4 KiB apart; and the
#    wall clock's overhead is the least of the parallel stand-in's samples, not their median (a busy
#    calibration's waits for a core were credited to the kernel).
# 7: the isolated protocol's inputs: each call of each array scaled by a window of the variant
#    factors that starts at an offset the evaluator draws, not at the call's number (two calls no
#    longer reveal the rest); the plausibility checks judge the charged times the verdict uses, not
#    the wall times. The in-process protocol (the study's landscapes) is unchanged.
# 8: the isolated protocol compares two kernels only on free cores: a pair of calls counts only when no
#    other task could have taken one of the cores the kernels are given (agent/backends/isolated.py
#    QUIET_PAIRS); a run whose crowded pairs outnumber the rest is not judged (DISCARDED, "not
#    judged", `judged` False, and the loop records no such attempt). Under outside load a serial
#    candidate was kept against a faster parallel parent. The pairs that count are timed as in 7.
# 9: the isolated protocol reads back every cache line of a call's buffers after writing them, before
#    the kernel is thawed (a `CACHE_LINE` stride, replaced by the flush at 17): a cache-resident kernel's first
#    pass over the evaluator's writes ran up to 1.5x slower than over its own process's. And a call's
#    clocks start before the evaluator reads the kernel's done FIFO, which can wake a frozen kernel
#    that asked for a signal then: what it runs once woken is charged.
# 10: the isolated protocol runs both kernels of a comparison in the same address layout (no
#    randomisation in their children) and a single-threaded kernel on the comparison's one home CPU
#    (agent/backends/isolated.py `Placement`); a kernel may not set its own CPUs (in both protocols;
#    OpenMP is told not to bind, which it did not here). Each child's own
#    layout and CPU moved a kernel's time by up to 15%: a kernel compared with itself read 0.89-1.12x.
# 11: the isolated protocol's call-overhead calibration in 8 calls of 0.5 ms stand-ins per child
#    (12 of 1 ms before; the same overheads, measured: agent/backends/isolated.py OVERHEAD_CALLS),
#    and histogram's reference counts two values at a time (the same counts, 1.4-1.8x faster): it is
#    computed after every pair of the isolated protocol's calls. And the isolated protocol draws the
#    order of each block of two pairs (one in each order) and of its children's start and load: from
#    the strict A B, B A order a kernel learnt whether it was the candidate or the parent, and one
#    that slowed itself down only as the parent made every comparison against it a fake speedup
#    (a mitigation: a parent that slows down at random is not stopped; docs/sandbox.md).
# 12: the isolated protocol does not judge a comparison of a kernel timed by its CPU time with one
#    timed by the wall clock while the hypervisor took more than 5% of the time of the CPUs it may run
#    on over its timed calls (/proc/stat's steal; agent/backends/isolated.py STOLEN_SHARE_MAX): stolen
#    time slows a parallel kernel's wall time and not a serial kernel's CPU time, and no count of
#    runnable tasks sees it.
# 13: a pair of the isolated protocol's calls counts only when other tasks ran no more than 150 us plus
#    2% of each call beside it (the root cgroup-v1 cpuacct's CPU time of every task over the call, less
#    the call's sandbox and the evaluator's thread; agent/backends/isolated.py `ran_beside`): the
#    runnable samples are taken between calls, and bursts of load inside them moved a serial kernel
#    against its parallel parent from 0.62-0.72x to up to 1.04x unseen (results/stop46-host). And the
#    hypervisor's steal is judged for every comparison in which a kernel ran more than one thread,
#    not only where the two kernels were timed mostly by different clocks (under steal a parallel
#    kernel's calls may be charged their summed CPU time: the stop-46 adversary). Admission 6 (its own
#    version, agent/backends/admission.py) holds a kernel's instructions to its target's x86-64 level.
# 14: the isolated protocol's kernels read one copy of each call's inputs, mapped read-only in their
#    processes (a write faults; agent/backends/isolated.py `SharedInputs`), written by the evaluator
#    straight from the variant and checked against as it is: no second copy per kernel, no copy from a
#    third, no byte comparison of the inputs after each call (a kernel cannot change them). Less of the
#    evaluator's memory traffic between calls: a kernel timed alone read slower isolated than
#    in-process by less (transpose's tiled best-A x1.26 against x1.33, 10 rounds each); transpose's
#    comparisons did not move measurably, elementwise_chain's bests came within 2% of in-process
#    (x1.056 and x1.031 at 13, x0.992 and x1.005: docs/sandbox.md#cost).
# 15: the isolated protocol places each thread of a kernel process with several threads on a CPU of
#    its own (agent/backends/isolated.py `KernelServer.place`; before, every thread on every CPU): left
#    free, a parallel kernel's threads often shared one CPU for a whole comparison, matmul's parallel
#    config reading 1.1-2.5 ms (10.4-18.5x the baseline) against 1.0-1.1 ms pinned in 11 of 12
#    comparisons (results/stop49/pinning.log). Serial kernels are placed as before.
# 16: a timed kernel has no clock. The isolated protocol's child is a C program (agent/backends/
#    serve_loop.c; it was Python calling that loop), with no interpreter in the process a kernel is
#    timed in; once the kernel is loaded it turns the time-stamp counter off (rdtsc, rdtscp fault),
#    unmaps the vDSO and its clock pages, wipes the stack where its stand-ins' clock readings were,
#    zeroes every reading of a clock left in the memory it writes (glibc's loader keeps one of the
#    counter as the process starts; added at stop 54 without a new version: no honest verdict moves,
#    and that reading gave the time since boot only) and stacks a filter refusing every system call that reads a clock or carries the time
#    (agent/backends/seccomp.py CLOCK_FILTER: clock_gettime, times, sysinfo, getrusage, file times,
#    /proc, a futex or a sleep until a date). With a clock a kernel knows its age, and a parent could
#    run honest while new and slow ever after (the fourteenth adversary's stale figure). A kernel
#    that reads a clock in the isolated protocol is `crashed` (a fault) or gets an error. The
#    in-process protocol, which times the landscapes, is unchanged.
# 17: every timed call starts from a declared cold state, in both protocols and for the libraries
#    kernels are quoted beside: just before the call every cache line of its inputs and outputs is
#    written back and evicted from every cache (clflushopt, agent/backends/timed_call.c; the
#    isolated protocol flushes from the evaluator, in place of 9's read-back). Warm, the caches held
#    whatever the last harness work left, and that moved a serial memory-bound kernel's time by more
#    than the 2% the cost goal allows: on an Intel host two plain harnesses with no sandbox disagreed
#    by up to 17%, and the isolated protocol was within 2% of plain C in 0 of 13 cells; flushed, in
#    10 of 13 (results/stop56, docs/sandbox.md#cold-state). A kernel whose working set fits the
#    last-level cache is timed from memory: 1.7-2.4x slower than warm there. Times of 16 and before
#    are warm and are not comparable with these. One plan stays warm, declared: LANDSCAPE_TIMING
#    (kernelgraph/bench/landscapes.py), so study v3's landscapes stay one measurement.
# 18: every kernel is called with its stack at one declared place within a page, in both protocols
#    (agent/backends/kernel_call.h `KG_KERNEL_FRAME`, the isolated protocol's child's place before,
#    so its figures stand). A kernel that keeps a scratch array on its stack aliases its inputs as the
#    two sit modulo 4 KiB, and the in-process child's stack sat wherever the process's randomised
#    stack put it: histogram's baseline read 11.1-14.8 ms from one in-process evaluation to the next,
#    against 11.7-11.9 isolated; called at the declared place, 11.6-11.8 (8 repeats each,
#    results/stop58, docs/sandbox.md#one-stack-place). And the in-process child's arrays start on a
#    huge page, as the isolated protocol's files do (it was any 4 KiB page: `_child.HUGE_PAGE`).
# 19: the isolated protocol's evaluator makes every hand-over (thaw, the go byte, waiting for the
#    answer, the freeze) from the CPU the call is placed on (`isolated._on_cpu_of` around
#    `KernelServer.call`), not only the writes before it: left free between the write and the
#    answer, it woke on either vCPU, and the child's share of a hand-over moved between about 12 and
#    35 us with where it had woken, so the overhead measured by the stand-ins could sit on one level
#    and the calls on the other (an empty kernel at 0.32-0.92x the calibrated overhead in 12 fresh
#    children; pinned, 0.76-2.54x in 48, their floors 0.78-1.50x in 24: results/stop59,
#    docs/sandbox.md#one-hand-over).
#    The in-process protocol, which times the landscapes, is unchanged. In the declared cost run the
#    medians within 2% of the in-process ones went from 15 of 26 (18) to 21, none missed (issue #26).
# 20: the isolated protocol's buffer files are whole huge pages long (`isolated.file_bytes`), so the
#    kernel's arrays sit on huge pages as the in-process arena's do and as the layout assumes. tmpfs
#    mounted huge=within_size backs only huge pages wholly inside a file, and a mapping shorter than
#    one is never aligned to one: every file under 2 MiB (matmul's 730 KB of inputs, its 1.1 MB
#    outputs' file) and every file's tail sat on 4 KiB pages at scattered physical addresses
#    (/proc/<child>/smaps: ShmemPmdMapped 0 kB; now 2048 kB; results/stop61,
#    docs/sandbox.md#huge-page-files). The in-process protocol is unchanged.
# 21: without the sandbox (--unsafe-no-sandbox) the isolated protocol's tree holds the kernel's own
#    process (`KernelServer._walk`). The tree was what bwrap's launcher started, and unconfined the
#    process started is the kernel's child itself: it was never frozen between calls, placed or
#    charged (each call read 0 ns of CPU time), and every comparison read as crowded, not judged
#    (results/stop62/unconfined_probe.out). Nothing timed in the sandbox changes.
# 22: the sandbox's /etc is readable (`Sandbox.command`), so a step's dynamic loader reads
#    /etc/ld.so.cache. Left to bwrap, /etc was 0700 and root's, every step's uid was refused the cache,
#    and the loader's search without it moved every library 9 pages from where it sits in root's or an
#    unconfined process: the isolated child, whose layout is fixed, put matmul best-A in the slower of
#    its two speeds (2.55-2.75 against 2.2-2.35 ms) in 18 of 20 evaluations, 3 of 20 with the cache
#    read (results/stop64/etc_readable_probe.out, docs/sandbox.md "Stop 64"). Every sandboxed step's
#    loader now reads the cache, the in-process child's too (whose layout is drawn anew each time).
# 23: the isolated protocol's child turns the time-stamp counter off before the stand-ins that
#    calibrate a call's overhead, not after the kernel is loaded (`serve_loop.c` kg_counter_off), and
#    each stand-in's answer says it did. Every switch into or out of a thread with the counter off
#    writes CR4, which a KVM guest may pay as an exit: on stop 65's AMD host an empty kernel's call
#    cost 15-17 us more than the calibration had taken off (results/stop65/tsc_probe.out), and the
#    isolated medians sat 35-180 us above the in-process ones in 24 of 26 cells of stop 64's bench.
# 24: the isolated protocol takes off what each of a kernel's threads beyond its first adds to a
#    call (`CallOverhead.off`, measured by stand-ins run beside threads asleep as idle OpenMP workers
#    are: `serve_loop.c` kg_sleepers). The stop after every answer (SIGSTOP) wakes an idle worker to
#    join the group stop and every SIGCONT wakes it again: 10-35 us of CPU time a call for one worker
#    on stop 66's 2-core host (results/stop66/omp_empty_probe.out), charged to every parallel kernel
#    and never to an in-process one. Serial kernels are unchanged (no thread beyond the first).
EVALUATOR_VERSION = 24
DEFAULT_SEEDS: tuple[int, ...] = (101, 202, 303)
REVERIFY_SEEDS: tuple[int, ...] = (404, 505, 606)
# Beyond these the measurement contradicts the hardware: IMPLAUSIBLE, whatever re-verification says.
# MAX_COMPUTE_FRACTION of the FMA peak (core/signature.py; the service checks it too). The
# evaluator knows every level's measured bandwidth, so it bounds bytes/s by the fastest level
# (`Target.max_gbps`, L1's on a CPU); the service, which stores only the memory peak, keeps the
# coarser MAX_MEMORY_FRACTION of it. Both peaks are measured upper bounds (agent/targets.py); the
# 10% covers their own timing noise.
MAX_LEVEL_BANDWIDTH_FRACTION = 1.1
# Beyond this the result is possible but suspicious: re-verify on fresh inputs, as KernelBench flags.
MAX_SPEEDUP = 10.0


class RunStatus(StrEnum):
    OK = "ok"
    CRASHED = "crashed"
    TIMEOUT = "timeout"


@dataclass(frozen=True)
class OutputSpec:
    name: str
    shape: tuple[int, ...]
    dtype: str


@dataclass(frozen=True)
class RunReport:
    """What a sandboxed run gives back: per input set, the outputs and the inputs' digests after it."""

    status: RunStatus
    outputs: tuple[Arrays, ...] = ()
    input_digests: tuple[Mapping[str, str], ...] = ()
    message: str = ""
    extra: Mapping[str, Any] = field(default_factory=dict)


CandidateRunner = Callable[[Sequence[Arrays], Sequence[OutputSpec]], RunReport]


def output_specs(task: Task, inputs: Arrays) -> list[OutputSpec]:
    return [
        OutputSpec(name, tuple(int(d) for d in shape), task.output_dtype(name))
        for name, shape in task.output_shapes(inputs).items()
    ]


def fresh_output(spec: OutputSpec) -> np.ndarray:
    """A new output buffer filled with NaN (floats) or the dtype's minimum (ints)."""
    out = np.empty(spec.shape, dtype=spec.dtype)
    out.fill(np.nan if out.dtype.kind == "f" else np.iinfo(out.dtype).min)
    return out


def conforming(output: object, spec: OutputSpec) -> np.ndarray:
    """`output` if it is an array of the spec's shape and dtype; ValueError otherwise (runners check
    what a sandboxed process handed back before the evaluator compares it)."""
    if (
        not isinstance(output, np.ndarray)
        or output.shape != spec.shape
        or output.dtype != np.dtype(spec.dtype)
    ):
        raise ValueError(f"output {spec.name!r} is not a {spec.dtype} array of shape {spec.shape}")
    return output


def digest(array: np.ndarray) -> str:
    return hashlib.sha256(np.ascontiguousarray(array).tobytes()).hexdigest()


def make_input_sets(task: Task, seeds: Sequence[int], small: bool) -> list[Arrays]:
    """Independent input sets: same shapes, different values; checked to really differ. The task's
    edge-of-domain set (made from the first) comes last."""
    sets = [task.make_inputs(seed, small) for seed in seeds]
    if task.edge_inputs is not None:
        sets.append(task.edge_inputs(sets[0]))
    for a, b in itertools.pairwise(sets):
        if all(np.array_equal(a[k], b[k]) for k in a):
            raise ValueError(
                f"task {task.name}: seeds produced identical inputs; make_inputs must use the seed"
            )
    return sets


def compare(
    task: Task, name: str, got: np.ndarray, want: np.ndarray, inputs: Arrays | None = None
) -> tuple[bool, str, float]:
    """(ok, reason, max_abs_error) for one output; exact for integer outputs. `inputs` (those `want`
    was computed from) give the task's `error_scale`; without them the output's RMS is the scale."""
    if got.shape != want.shape:
        return False, f"output {name!r} has shape {got.shape}, expected {want.shape}", float("inf")
    want = want.astype(got.dtype, copy=False)
    if got.dtype.kind != "f":
        bad = np.flatnonzero(got.ravel() != want.ravel())
        if bad.size:
            i = int(bad[0])
            return (
                False,
                f"output {name!r}: {bad.size} wrong values (first at {i}: {got.ravel()[i]} != {want.ravel()[i]})",
                float(np.abs(got.astype("f8") - want).max()),
            )
        return True, "", 0.0
    finite = np.isfinite(got)
    if not finite.all():
        bad = np.flatnonzero(~finite.ravel())
        return (
            False,
            f"output {name!r} has {bad.size} NaN/inf values (first at flat index {int(bad[0])}): unwritten or invalid",
            float("nan"),
        )
    tol = task.tolerance
    err = np.abs(got.astype("f8") - want.astype("f8"))
    scale = task.error_scale(inputs)[name] if task.error_scale and inputs is not None else rms_scale(want)
    limit = tol.floor * np.asarray(scale, dtype="f8") + tol.rtol * np.abs(want.astype("f8"))
    max_err = float(err.max()) if err.size else 0.0
    over = np.flatnonzero((err > limit).ravel())
    if over.size:
        i = int(over[0])
        return (
            False,
            (
                f"output {name!r}: {over.size} of {err.size} values outside rtol={tol.rtol:g} "
                f"floor={tol.floor:g} x scale "
                f"(first at flat index {i}: got {got.ravel()[i]:.6g}, expected {want.ravel()[i]:.6g}; max abs error {max_err:.3g})"
            ),
            max_err,
        )
    return True, "", max_err


def verify(
    task: Task, input_sets: Sequence[Arrays], report: RunReport, digests: Sequence[Mapping[str, str]]
) -> CheckResult:
    """Judge a finished run: `digests` are the pristine inputs' digests, taken before the run."""
    if report.status is RunStatus.TIMEOUT:
        return CheckResult(Outcome.TIMEOUT, report.message)
    if report.status is not RunStatus.OK:
        return CheckResult(Outcome.CRASHED, report.message)
    if len(report.outputs) != len(input_sets) or len(report.input_digests) != len(input_sets):
        return CheckResult(Outcome.CRASHED, "runner returned results for the wrong number of input sets")
    worst = 0.0
    for k, (inputs, outputs, after, before) in enumerate(
        zip(input_sets, report.outputs, report.input_digests, digests, strict=True)
    ):
        changed = [name for name in inputs if after.get(name) != before[name]]
        if changed:
            return CheckResult(
                Outcome.INCORRECT, f"input set {k}: the kernel modified input(s) {', '.join(changed)}"
            )
        expected = task.reference(inputs)  # after the candidate ran, from a pristine copy
        for name, want in expected.items():
            if name not in outputs:
                return CheckResult(Outcome.INCORRECT, f"input set {k}: output {name!r} missing")
            ok, reason, err = compare(task, name, np.asarray(outputs[name]), np.asarray(want), inputs)
            if not ok:
                return CheckResult(
                    Outcome.INCORRECT, f"input set {k}: {reason}", None if np.isnan(err) else err
                )
            worst = max(worst, err)
    return CheckResult(Outcome.KEPT, f"correct on {len(input_sets)} input sets", worst)


def check(
    task: Task, runner: CandidateRunner, seeds: Sequence[int] = DEFAULT_SEEDS, *, small: bool = True
) -> CheckResult:
    """Run the candidate on several independent input sets and judge it against the reference."""
    if len(seeds) < 3:
        raise ValueError("at least 3 independent input sets are required")
    sets = make_input_sets(task, seeds, small)
    digests = [{name: digest(a) for name, a in s.items()} for s in sets]
    specs = output_specs(task, sets[0])
    # The runner gets copies: nothing it does can touch the arrays the reference reads.
    report = runner([{k: v.copy() for k, v in s.items()} for s in sets], specs)
    return verify(task, sets, report, digests)


def impossibility(
    task: Task, inputs: Arrays, median_ns: float, *, peak_gflops: float | None, peak_gbps: float | None
) -> str:
    """Why this time cannot be real on the target ("" when physically possible).

    A time beyond the measured compute or bandwidth peak is a broken measurement (state kept between
    timed calls, work done elsewhere), never a fast kernel: the attempt is IMPLAUSIBLE. `peak_gbps`
    is the target's `max_gbps`: no kernel streams faster than its fastest level, whatever it caches.
    """
    if not np.isfinite(median_ns) or median_ns <= 0:
        return f"non-positive time {median_ns} ns"
    gflops = task.flops(inputs) / median_ns
    gbps = task.bytes_moved(inputs) / median_ns
    reasons = []
    if peak_gflops and gflops > MAX_COMPUTE_FRACTION * peak_gflops:
        reasons.append(
            f"{gflops:.1f} GFLOP/s exceeds {MAX_COMPUTE_FRACTION:g}x the target's {peak_gflops:.1f} GFLOP/s peak"
        )
    if peak_gbps and gbps > MAX_LEVEL_BANDWIDTH_FRACTION * peak_gbps:
        reasons.append(
            f"{gbps:.1f} GB/s exceeds {MAX_LEVEL_BANDWIDTH_FRACTION:g}x the {peak_gbps:.1f} GB/s fastest-level peak"
        )
    return "; ".join(reasons)


def suspicion(median_ns: float, parent_median_ns: float | None) -> str:
    """Why a physically possible time still deserves re-verification ("" when unremarkable)."""
    if parent_median_ns and median_ns > 0 and parent_median_ns / median_ns > MAX_SPEEDUP:
        return f"{parent_median_ns / median_ns:.1f}x faster than its parent"
    return ""
