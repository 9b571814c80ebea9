"""The one timing policy both backends use (agent/backends/timing.py): stopping rule, peak, re-verification;
and the loop's keep decision over the interleaved pairs (agent/loop.py)."""

from __future__ import annotations

import dataclasses
import itertools
import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from kernelgraph.agent.backends import isolated
from kernelgraph.agent.backends._child import (
    STAGGER_BYTES,
    _staggered_arrays,
    enough_trials,
    staggered_offsets,
)
from kernelgraph.agent.backends.bubblewrap import Sandbox
from kernelgraph.agent.backends.c import CBackend
from kernelgraph.agent.backends.timing import ISOLATED, TimingJudgement, TimingPlan, judge_timing
from kernelgraph.agent.loop import MAX_MEASUREMENTS, evaluate, keep_decision, median_interval
from kernelgraph.agent.results import CheckResult, CompileResult, Outcome, ProfileResult
from kernelgraph.agent.targets import Target, get_target
from kernelgraph.agent.tasks import get_task
from kernelgraph.core.signature import CounterSource


def test_stopping_rule_honours_the_plan() -> None:
    plan = TimingPlan(min_trials=5, max_trials=8, budget_s=10.0, target_rel_iqr=0.0).request()
    assert not enough_trials([1.0] * 4, 0.0, plan)  # below the floor, whatever the spread
    assert not enough_trials([1.0, 2.0, 3.0, 4.0, 9.0], 0.0, plan)
    assert enough_trials([1.0, 2.0, 3.0, 4.0, 9.0], 11.0, plan)  # past the budget
    assert enough_trials([float(i) for i in range(1, 9)], 0.0, plan)  # at max_trials
    tight = TimingPlan(min_trials=5, target_rel_iqr=0.02).request()
    assert enough_trials([100.0] * 5, 0.0, tight)


def _judge(
    median_ns: float, parent_ns: float | None, reverified: CheckResult
) -> tuple[TimingJudgement, list[int]]:
    task = get_task("softmax", "triton")
    inputs = task.make_inputs(0, True)
    calls: list[int] = []

    def reverify() -> CheckResult:
        calls.append(1)
        return reverified

    judged = judge_timing(
        task, inputs, median_ns, parent_ns, peak_gflops=1000.0, peak_gbps=1000.0, reverify=reverify
    )
    return judged, calls


def test_a_time_beyond_the_peak_is_implausible_and_never_reverified() -> None:
    judged, calls = _judge(1e-3, None, CheckResult(Outcome.KEPT, "ok"))
    assert judged.outcome is Outcome.IMPLAUSIBLE and "exceeds" in judged.reason
    assert calls == []


def test_a_suspicious_speedup_stands_only_after_reverification() -> None:
    judged, calls = _judge(1e6, 1e8, CheckResult(Outcome.KEPT, "ok"))
    assert judged.outcome is None and judged.reverified and calls == [1]
    judged, _ = _judge(1e6, 1e8, CheckResult(Outcome.INCORRECT, "wrong on seed 404"))
    assert judged.outcome is Outcome.INCORRECT and "re-verification failed" in judged.reason
    judged, calls = _judge(1e6, 2e6, CheckResult(Outcome.INCORRECT, "unused"))
    assert judged.outcome is None and not judged.reverified and calls == []


# ------------------------------------------------------------------------ keep decisions (#29)


def _profile(ratios: list[float]) -> ProfileResult:
    return ProfileResult(median_ns=1.0, iqr_ns=0.0, trials=len(ratios), counters={},
                         counter_source=CounterSource.CPU_TIMING, paired_ratios=tuple(ratios))  # fmt: skip


def test_the_median_interval_is_taken_from_order_statistics() -> None:
    values = [float(v) for v in range(1, 21)]  # n = 20: P(Binomial(20, 1/2) <= 3) = 0.0013 <= 0.005
    assert median_interval(values, 0.99) == (4.0, 10.5, 17.0)
    assert median_interval([3.0, 1.0, 2.0, 5.0, 4.0], 0.99) == (1.0, 3.0, 5.0)  # too few: the extremes


def test_a_clear_win_is_kept_at_once_and_no_gain_is_discarded_at_once() -> None:
    calls: list[int] = []

    def again() -> ProfileResult:
        calls.append(1)
        return _profile([1.3] * 20)

    win = keep_decision(_profile([1.25 + 0.01 * (i % 7) for i in range(20)]), again, 0.02)
    assert win.keep and win.measurements == 1 and calls == []
    same = keep_decision(_profile([0.97 + 0.005 * (i % 9) for i in range(20)]), again, 0.02)
    assert not same.keep and same.measurements == 1 and calls == []


def test_an_unproven_gain_is_remeasured_up_to_the_bound_then_discarded() -> None:
    noisy = [0.8, 1.3] * 10  # median 1.05, interval 0.8-1.3: above the bar but not proven
    calls: list[int] = []

    def again() -> ProfileResult:
        calls.append(1)
        return _profile(noisy)

    decision = keep_decision(_profile(noisy), again, 0.02)
    assert not decision.keep and decision.measurements == MAX_MEASUREMENTS == len(calls) + 1
    assert decision.pairs == len(noisy) * MAX_MEASUREMENTS
    proven = keep_decision(_profile(noisy), lambda: _profile([1.2] * 40), 0.02)  # pooled: proven
    assert proven.keep and proven.measurements == 2
    failed = keep_decision(_profile(noisy), lambda: None, 0.02)
    assert not failed.keep and failed.measurements == 1


def test_a_remeasurement_not_judged_leaves_no_decision() -> None:
    """A promising candidate whose re-measurement was not judged (evaluator 8: the cores were not
    free) is neither kept nor a failure: the decision says why it is refused, and `evaluate` marks
    the verdict not judged, so the loop records nothing."""
    noisy = [0.8, 1.3] * 10
    why = "not judged: in 21 of 21 pairs of calls another task wanted one of the 2 cores"
    refused = dataclasses.replace(_profile([]), outcome=Outcome.DISCARDED, reason=why, judged=False)
    decision = keep_decision(_profile(noisy), lambda: refused, 0.02)
    assert not decision.keep and decision.refused == why and decision.measurements == 1
    assert decision.refused_by_host
    # a re-measurement the caller's rule refuses (a parent over its mark) is not pooled either, and
    # is not the host's doing
    slowed = keep_decision(
        _profile(noisy), lambda: _profile([1.2] * 40), 0.02, lambda _: "not judged: slowed"
    )
    assert not slowed.keep and slowed.refused == "not judged: slowed" and not slowed.refused_by_host

    class Refusing:  # the first profile is promising, the re-measurement is refused
        name = "c"

        def __init__(self) -> None:
            self.profiles = [dataclasses.replace(_profile(noisy), parent_median_ns=1.05), refused]

        def compile(self, task: Any, source: str, target: Any) -> CompileResult:
            return CompileResult(ok=True, artifact="kernel.so")

        def check(self, task: Any, source: str, target: Any, seeds: Any = ()) -> CheckResult:
            return CheckResult(Outcome.KEPT)

        def profile(
            self, task: Any, source: str, target: Any, parent_source: str | None = None,
            reference_source: str | None = None,
        ) -> ProfileResult:  # fmt: skip
            return self.profiles.pop(0)

    verdict = evaluate(get_task("rmsnorm"), Refusing(), get_target("cpu-x86-64-v2"), "candidate", "parent")
    assert verdict.outcome == Outcome.DISCARDED and not verdict.judged and verdict.speedup is None
    assert why in verdict.reason, verdict.reason


def test_both_protocols_lay_a_kernels_arrays_out_staggered() -> None:
    """In a fresh process numpy's large allocations are mapped and all start 16 bytes into a page, so an
    input and an output element of one index sat a multiple of 4 KiB apart in the in-process child; it
    now carves them from one buffer as the isolated protocol lays out its shared one."""
    specs = [
        ((1024, 1024), np.dtype(np.float32)),
        ((1024,), np.dtype(np.int32)),
        ((1024, 1024), np.dtype(np.float32)),
    ]
    arrays = _staggered_arrays(specs)
    offsets, size = staggered_offsets([a.nbytes for a in arrays])
    assert [a.ctypes.data - arrays[0].ctypes.data for a in arrays] == offsets and arrays[
        0
    ].ctypes.data % 4096 == 0
    assert [(a.shape, a.dtype) for a in arrays] == specs and size >= offsets[-1] + arrays[-1].nbytes
    assert all((b.ctypes.data - a.ctypes.data) % 4096 for a, b in itertools.pairwise(arrays))
    assert offsets[1] - offsets[0] == arrays[0].nbytes + STAGGER_BYTES  # 64-byte aligned sizes: no padding


def _huge_mapped_kb(pid: int, names: tuple[str, ...]) -> dict[str, int]:
    """ShmemPmdMapped of each of the process's mappings of the files `names`, in KiB (smaps)."""
    blocks = re.split(r"\n(?=[0-9a-f]+-[0-9a-f]+ )", Path(f"/proc/{pid}/smaps").read_text())
    found: dict[str, int] = {}
    for block in blocks:
        path = block.splitlines()[0].split()[-1]
        if Path(path).name in names:
            huge = re.search(r"^ShmemPmdMapped:\s+(\d+) kB", block, re.M)
            found[Path(path).name] = found.get(Path(path).name, 0) + int(huge[1] if huge else 0)
    return found


def _huge_tmpfs(directory: Path) -> bool:
    """Whether `directory` is the mount point of a tmpfs with huge pages on (/proc/mounts)."""
    for line in Path("/proc/mounts").read_text().splitlines():
        _, point, kind, options, *_ = line.split()
        if point == str(directory) and kind == "tmpfs":
            return "huge=" in options
    return False


@pytest.mark.parametrize("whole_huge_pages", [True, False], ids=["as-built", "control-layout-sized-files"])
def test_the_isolated_protocols_arrays_sit_on_huge_pages(
    whole_huge_pages: bool, c_cache: Path, cpu_target: Target, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The in-process arena is on huge pages (numpy asks for them), and the layout's cache sets assume
    them; the isolated protocol's inputs and outputs are files in a tmpfs mounted huge=within_size,
    which backs only huge pages wholly inside a file. Files as long as the layout (matmul's inputs:
    730 KB) sat on 4 KiB pages; whole huge pages long, the kernel's process maps both on huge pages.
    Control, files the layout's length: none."""
    if not whole_huge_pages:
        monkeypatch.setattr(isolated, "file_bytes", lambda nbytes: max(nbytes, 1))
    seen: list[dict[str, int]] = []
    real_call = isolated.KernelServer.call

    def call(server: isolated.KernelServer, deadline: float, command: bytes = b"c") -> tuple[int, int]:
        spent = real_call(server, deadline, command)
        if _huge_tmpfs(server.shared_inputs.directory):
            seen.append(_huge_mapped_kb(server.kernel_pid(), ("inputs.bin", "shared.bin")))
        return spent

    monkeypatch.setattr(isolated.KernelServer, "call", call)
    task = get_task("matmul")
    timer = CBackend(cache_dir=c_cache, check_timeout_s=20.0, counters=False,
                     timing=TimingPlan(warmup=1, min_trials=3, max_trials=3, budget_s=0.3, protocol=ISOLATED))  # fmt: skip
    baseline = task.source("c", task.baseline_config)
    timer.profile(task, baseline, cpu_target, parent_source=baseline)  # judged or not: the calls ran
    if not seen:
        pytest.skip(
            "the isolated protocol's scratch is no huge-page tmpfs here (not root, or no huge= option)"
        )
    last = seen[-1]
    assert set(last) == {"inputs.bin", "shared.bin"}, seen
    assert all(kb >= 2048 for kb in last.values()) == whole_huge_pages, seen
    assert any(kb for kb in last.values()) == whole_huge_pages, seen


def _process_state(pid: int) -> str:
    with open(f"/proc/{pid}/stat") as f:
        return f.read().rsplit(")", 1)[1].split()[0]


@pytest.mark.parametrize("confined", [True, False], ids=["sandboxed", "unsafe-no-sandbox"])
def test_the_kernels_process_is_frozen_and_charged_with_or_without_the_sandbox(
    confined: bool, c_cache: Path, cpu_target: Target, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Without the sandbox (--unsafe-no-sandbox) no bwrap launcher stands above the kernel's child,
    and the tree the evaluator freezes, places and charges left the child out: the kernel ran
    unfrozen between calls, each call was charged no CPU time, and every comparison read as crowded.
    With or without the sandbox, after every call the kernel's process is there, stopped, and the
    call was charged time."""
    seen: list[tuple[int | None, str | None, int]] = []
    real_call = isolated.KernelServer.call

    def call(server: isolated.KernelServer, deadline: float, command: bytes = b"c") -> tuple[int, int]:
        spent = real_call(server, deadline, command)
        pid = server.kernel_pid()
        seen.append((pid, _process_state(pid) if pid else None, spent[0]))
        return spent

    monkeypatch.setattr(isolated.KernelServer, "call", call)
    task = get_task("rmsnorm")
    timer = CBackend(cache_dir=c_cache, check_timeout_s=20.0, counters=False, sandbox=Sandbox(enabled=confined),
                     timing=TimingPlan(warmup=1, min_trials=5, max_trials=5, budget_s=0.3, protocol=ISOLATED))  # fmt: skip
    baseline = task.source("c", task.baseline_config)
    timer.profile(task, baseline, cpu_target, parent_source=baseline)  # judged or not: the calls ran
    assert len(seen) >= 12, seen  # the stand-ins' calls and both kernels' warm-up and timed calls
    assert all(pid is not None and state == "T" for pid, state, _ in seen), seen
    assert all(charged > 0 for _, _, charged in seen), seen


GAP_AFTER_THE_OUTPUT = """
void kernel(const float *a, const float *x, float *y, int m, int n) {
    for (int i = 0; i < m; i++) {
        float s = 0.0f;
        for (int j = 0; j < n; j++) s += a[(long)i * n + j] * x[j];
        y[i] = s;
    }
    char *gap = (char *)y + ((long)m * 4 + 63) / 64 * 64;
    for (int i = 0; i < GAP_BYTES; i++) gap[i] = (char)(i + m); /* the whole gap after the output */
}
""".replace("GAP_BYTES", str(STAGGER_BYTES))


def test_the_gap_after_an_output_is_there_in_every_call(backend: CBackend, cpu_target: Target) -> None:
    """A kernel may write the gap the layout leaves after its output, as timed (docs/sandbox.md: the
    gaps after outputs stay a place for state). The correctness check's calls allocated each output on
    its own, so the same write ran over the heap: the stop-41 veto kernel that keeps its state there
    crashed its check at random (CI, stop 47). Every call now carves its outputs from the layout."""
    for _ in range(3):  # a heap overrun need not crash every time; the gap holds every time
        verdict = backend.check(get_task("matvec"), GAP_AFTER_THE_OUTPUT, cpu_target)
        assert verdict.outcome == Outcome.KEPT, verdict.reason
