"""The isolated protocol's per-call check (agent/backends/isolated.py `CallChecker`), made cheap without
becoming weaker (issue #26, point 4): rows checked through a task's own row reference (stencil2d: rows
with their halo; spmv_csr: CSR row slices; prefix_scan: prefix sums at sampled positions), a whole-output
scan for NaN/inf/sentinels on every call; the inputs need no comparison, since the kernels map them
read-only (tests/agent/test_red_team.py `test_a_kernel_cannot_write_the_inputs_it_is_checked_against`)."""

from __future__ import annotations

import dataclasses
import random
from types import SimpleNamespace

import numpy as np
import pytest

from kernelgraph.agent.backends import isolated
from kernelgraph.agent.backends._child import variant_factors
from kernelgraph.agent.backends.c import CBackend
from kernelgraph.agent.backends.isolated import CHECKED_ROWS, VARIANT_OFFSETS, CallChecker, row_reference
from kernelgraph.agent.backends.timing import ISOLATED, TimingPlan
from kernelgraph.agent.evaluator import output_specs
from kernelgraph.agent.results import Outcome
from kernelgraph.agent.targets import Target
from kernelgraph.agent.tasks import get_task
from kernelgraph.agent.tasks.base import Task

DECLARED = ("stencil2d", "spmv_csr", "prefix_scan")


@pytest.mark.parametrize("name", DECLARED)
@pytest.mark.parametrize("small", [True, False], ids=["small", "full"])
def test_a_declared_row_reference_gives_the_rows_of_the_whole_reference(name: str, small: bool) -> None:
    task = get_task(name)
    assert task.row_reference is not None and row_reference(task) is task.row_reference
    inputs = task.make_inputs(5, small)
    full = task.reference(inputs)
    n = next(iter(full.values())).shape[0]
    rows = np.unique(np.r_[0, 1, n - 2, n - 1, random.Random(7).sample(range(n), min(n, 100))])
    part = row_reference(task)(inputs, rows)  # type: ignore[misc]
    for out, want in full.items():
        np.testing.assert_allclose(part[out], want[rows], rtol=1e-6, atol=0)


def _checker(task: Task, seed: int = 1) -> tuple[CallChecker, SimpleNamespace]:
    base = task.make_inputs(3, False)
    specs = output_specs(task, base)
    inputs = {n: np.empty_like(a) for n, a in base.items()}  # what `SharedInputs.arrays` would be
    checker = CallChecker(task, base, specs, row_reference(task), random.Random(seed), inputs)
    # No kernel process behind it: like a server whose process cannot be read, it has no last CPU
    # (and none was chosen for its next call).
    server = SimpleNamespace(inputs=list(inputs.values()), outputs=[np.empty(s.shape, s.dtype) for s in specs],
                             last_cpu=lambda: None, flush=lambda: None, cpus=frozenset())  # fmt: skip
    return checker, server


def _honest_call(checker: CallChecker, server: SimpleNamespace, factors: np.ndarray, call: int) -> None:
    """What an honest kernel leaves: the inputs as written, every output as the reference has it."""
    checker.variant(factors, call)
    checker.write(server)  # type: ignore[arg-type]
    for out, want in zip(server.outputs, checker.task.reference(checker.expected).values(), strict=True):
        np.copyto(out, want)


@pytest.mark.parametrize("name", DECLARED)
def test_a_kernel_that_botches_a_share_of_the_rows_is_caught_on_the_calls(name: str) -> None:
    """Finite wrong values in 1/16 of the rows (any share a fake speedup needs) are caught on nearly
    every call, honest outputs on none; a single NaN on every call."""
    task = get_task(name)
    checker, server = _checker(task)
    calls = 10
    factors = variant_factors(max(a.size for a in checker.base.values()), calls, 11)
    rows = server.outputs[0].shape[0]
    botched = np.zeros(rows, dtype=bool)
    botched[random.Random(3).sample(range(rows), rows // 16)] = True
    caught = {"honest": 0, "rows": 0, "nan": 0}
    for call in range(calls):
        _honest_call(checker, server, factors, call)
        caught["honest"] += bool(checker.check(call, [server])[0])  # type: ignore[list-item]
        out = server.outputs[0]
        kept = out.copy()
        out[botched] = out[botched] * 1.01 + 1.0  # well outside any tolerance
        caught["rows"] += bool(checker.check(call, [server])[0])  # type: ignore[list-item]
        np.copyto(out, kept)
        out.reshape(-1)[(call * 7919) % out.size] = np.nan
        caught["nan"] += bool(checker.check(call, [server])[0])  # type: ignore[list-item]
    # each call misses 1/16 of the rows with probability (15/16)^64 < 2%
    assert CHECKED_ROWS == 64
    assert caught == {"honest": 0, "rows": caught["rows"], "nan": calls}
    assert caught["rows"] >= calls - 1, caught


def test_a_scan_that_drops_one_block_is_caught_on_every_call() -> None:
    """One position of many done wrong carries into every later prefix sum: the sampled positions
    see it unless all fall before it."""
    task = get_task("prefix_scan")
    checker, server = _checker(task, seed=2)
    factors = variant_factors(checker.base["x"].size, 10, 5)
    n = server.outputs[0].size
    for call in range(10):
        _honest_call(checker, server, factors, call)
        start = n // 4 + call * 1000
        server.outputs[0][start:] -= checker.expected["x"][start]  # one term left out
        assert "outside rtol" in checker.check(call, [server])[0]  # type: ignore[list-item]


# Honest at the correctness checks' sizes (below 65536 output elements), botched at the timed size in
# 1/16 of the output: the evaluator's checks of every timed call must find them.
BOTCHED = {
    "stencil2d": """
#include <string.h>
void kernel(const float* restrict u, float* restrict v, int h, int w) {
    int done = (long)h * w <= 65536 ? h : h - h / 16; /* the last rows: a copy of u, no work */
    memcpy(v, u, sizeof(float) * (size_t)w);
    for (int i = 1; i < h - 1; i++) {
        v[(long)i * w] = u[(long)i * w]; v[(long)i * w + w - 1] = u[(long)i * w + w - 1];
        if (i >= done) { memcpy(v + (long)i * w, u + (long)i * w, sizeof(float) * (size_t)w); continue; }
        for (int j = 1; j < w - 1; j++)
            v[(long)i * w + j] = 0.2f * (u[(long)i * w + j] + u[(long)(i - 1) * w + j]
                + u[(long)(i + 1) * w + j] + u[(long)i * w + j - 1] + u[(long)i * w + j + 1]);
    }
    memcpy(v + (long)(h - 1) * w, u + (long)(h - 1) * w, sizeof(float) * (size_t)w);
}
""",
    "spmv_csr": """
void kernel(const float* restrict values, const int* restrict col_idx, const int* restrict row_ptr,
            const float* restrict x, float* restrict y, int rows, int nnz) {
    (void)nnz;
    int skip = rows < 65536 ? 0 : rows / 16; /* the heavy rows come first: skipping them pays */
    for (int i = 0; i < rows; i++) {
        float s = 0.0f;
        if (i >= skip)
            for (long k = row_ptr[i]; k < row_ptr[i + 1]; k++) s += values[k] * x[col_idx[k]];
        y[i] = s;
    }
}
""",
    "prefix_scan": """
void kernel(const float* restrict x, float* restrict y, int n) {
    long done = n < 65536 ? n : n - n / 16; /* the last positions: the last sum repeated */
    double s = 0.0;
    for (long i = 0; i < done; i++) { s += x[i]; y[i] = (float)s; }
    for (long i = done; i < n; i++) y[i] = (float)s;
}
""",
}


@pytest.fixture(scope="module")
def timer(tmp_path_factory: pytest.TempPathFactory) -> CBackend:
    plan = TimingPlan(
        warmup=1, min_trials=4, max_trials=4, budget_s=5.0, target_rel_iqr=0.0, protocol=ISOLATED
    )
    return CBackend(cache_dir=tmp_path_factory.mktemp("botched"), counters=False, timing=plan)


@pytest.mark.parametrize("name", sorted(BOTCHED))
def test_a_real_kernel_botching_a_share_of_the_output_is_judged_incorrect_while_timed(
    name: str, timer: CBackend, cpu_target: Target
) -> None:
    task = get_task(name)
    target = dataclasses.replace(cpu_target, peak_gflops=None, peak_gbps=None)
    checked = timer.check(task, BOTCHED[name], target)
    assert checked.correct, checked.reason  # honest where the correctness checks look
    profile = timer.profile(task, BOTCHED[name], target, parent_source=task.source("c", task.baseline_config))
    assert profile.outcome == Outcome.INCORRECT, profile.reason
    assert "while timed: timed call" in profile.reason and "outside rtol" in profile.reason, profile.reason


def test_no_call_inputs_follow_from_the_earlier_calls_or_repeat_them(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each array's window of the variant factors starts at an offset the evaluator draws, none twice.
    With the window at the call's number, a_k[p] = b[p] f[k + p], so calls k and k + 1 predicted call
    k + 2 (a_{k+2}[p] = a_{k+1}[p] a_{k+1}[p + 1] / a_k[p + 1]): the stop-29 adversary's attack; the
    control shows the prediction then holds."""
    task = get_task("matvec")
    calls = 12  # ten predictions each way; each call costs a matvec reference (0.35-0.55 s)

    def run() -> tuple[CallChecker, list[dict[str, np.ndarray]]]:
        checker, server = _checker(task)
        factors = variant_factors(max(a.size for a in checker.base.values()), VARIANT_OFFSETS, 7)
        seen = []
        for call in range(calls):
            checker.variant(factors, call)
            checker.write(server)  # type: ignore[arg-type]
            seen.append({n: a.astype(np.float64).reshape(-1) for n, a in checker.expected.items()})
        return checker, seen

    def predicted(seen: list[dict[str, np.ndarray]], k: int) -> bool:
        first, second, third = (seen[k + i]["a"] for i in range(3))
        return bool(np.allclose(third[:-1], second[:-1] * second[1:] / first[1:], rtol=1e-5))

    checker, seen = run()
    assert not any(predicted(seen, k) for k in range(calls - 2))
    for name in checker.base:  # no call's array repeats another's
        assert len({s[name].tobytes() for s in seen}) == calls
    monkeypatch.setattr(isolated, "RANDOM_VARIANT_OFFSETS", False)
    _, control = run()
    assert all(predicted(control, k) for k in range(calls - 2))
