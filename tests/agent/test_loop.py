"""The optimization loop on the real C backend and the real Neo4j, through the in-process client."""

from __future__ import annotations

import fcntl
import os
import threading
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from kernelgraph.agent import loop
from kernelgraph.agent.backends import isolated
from kernelgraph.agent.backends.c import CBackend
from kernelgraph.agent.backends.timing import TimingPlan
from kernelgraph.agent.evaluator import EVALUATOR_VERSION
from kernelgraph.agent.loop import OptimizeResult, optimize
from kernelgraph.agent.proposers.base import Proposal, ProposalContext
from kernelgraph.agent.proposers.memoryless import MemorylessProposer
from kernelgraph.agent.results import CheckResult, CompileResult, Evaluation, Outcome, ProfileResult
from kernelgraph.agent.targets import Target
from kernelgraph.agent.tasks import get_task
from kernelgraph.client.http import AttemptLike
from kernelgraph.core.models import AttemptRecord, RecordResult
from kernelgraph.service.inprocess import InProcessClient
from kernelgraph.service.knowledge import KnowledgeService
from kernelgraph.service.store import GraphStore
from tests.agent.quiet_host import when_the_host_was_quiet

QUICK = TimingPlan(warmup=1, min_trials=5, max_trials=15, budget_s=0.4)
MATMUL_HEAD = "#include <string.h>\nvoid kernel(const float* restrict a, const float* restrict b, float* restrict c, int n) {\n"


class RecordingClient(InProcessClient):
    """The in-process client, keeping every attempt the loop sends (to check what crosses the seam)."""

    def __init__(self, knowledge: KnowledgeService, namespace: str) -> None:
        super().__init__(knowledge, namespace)
        self.sent: list[AttemptRecord] = []

    def record_attempt(self, attempt: AttemptLike) -> RecordResult:
        assert isinstance(attempt, AttemptRecord)
        self.sent.append(attempt)
        return super().record_attempt(attempt)


@pytest.fixture
def client(store: GraphStore, namespace: str) -> Iterator[RecordingClient]:
    with RecordingClient(KnowledgeService(store), namespace) as c:
        yield c


@pytest.fixture(scope="module")
def quick_backend(tmp_path_factory: pytest.TempPathFactory) -> CBackend:
    cache: Path = tmp_path_factory.mktemp("loop-cache")
    return CBackend(cache_dir=cache, check_timeout_s=4.0, timing=QUICK, counters=False)


def attempts_in_graph(store: GraphStore, namespace: str, run_id: str) -> list[dict[str, object]]:
    _, rows = store.run_text(
        "MATCH (a:Attempt {namespace: $ns, run_id: $run}) "
        "OPTIONAL MATCH (a)-[:RESULTED_IN]->(m:Measurement) "
        "RETURN a.attempt_key AS key, a.outcome AS outcome, a.diagnosis AS diagnosis, a.transform AS transform, "
        "m IS NOT NULL AS measured, m.evaluator_version AS evaluator_version, m.sandboxed AS sandboxed "
        "ORDER BY key",
        {"ns": namespace, "run": run_id},
        write=False,
    )
    return rows


def test_memoryless_matmul_doubles_and_records_every_attempt(
    quick_backend: CBackend, cpu_target: Target, client: RecordingClient, store: GraphStore, namespace: str
) -> None:
    def run() -> OptimizeResult:
        client.sent.clear()
        return optimize(
            get_task("matmul"),
            quick_backend,
            cpu_target,
            MemorylessProposer(seed=3),
            client,
            budget=8,
            seed=3,
        )

    result = run()
    # Steps the host left unjudged (the parent mark in its slow periods: up to 4 of 8 in runs of stop 51,
    # which then ended at 1.9x; results/stop51/unjudged_both-point-rule.log) leave the run short of its
    # budget: such a run is made once more. One that doubles is what is tested.
    first = (result.speedup, [s.diagnosis for s in result.steps if not s.judged])
    if result.speedup <= 2.0 and result.not_judged:
        result = run()
    assert result.attempts == 8
    assert result.speedup > 2.0, (first, result.speedup, [s.diagnosis for s in result.steps if not s.judged])
    assert sum(result.outcomes.values()) == result.attempts
    assert len(result.curve) == 8 and result.curve == sorted(result.curve)
    assert result.unrecorded == 0
    # Every judged attempt is stored; one not compared fairly is no evidence and is not (0-3 of the 8
    # here: results/stop49/unjudged-*.log; their diagnoses in the message).
    judged = [s for s in result.steps if s.judged]
    assert len(judged) == result.attempts - result.not_judged >= 3, [
        s.diagnosis for s in result.steps if not s.judged
    ]
    rows = attempts_in_graph(store, namespace, result.run_id)
    assert sorted(r["key"] for r in rows) == sorted(s.attempt_key for s in judged)
    assert sorted(r["outcome"] for r in rows) == sorted(s.outcome.value for s in judged)
    assert "void kernel" in result.best_source
    # The baseline goes over once; every later attempt names its parent (a kept child included) by id.
    full = [a for a in client.sent if a.parent_measurement is not None]
    assert [a.attempt_key for a in full] == [client.sent[0].attempt_key]
    assert all(a.parent is None and a.parent_measurement_id for a in client.sent[1:])
    # Each keep moves the parent on for the attempts after it: the attempts after the first name one parent
    # more for each keep before their last (a keep at the first attempt changes the parent of them all,
    # and one at the last of none).
    parents = [a.parent_measurement_id for a in client.sent[1:]]
    moves = sum(s.outcome == Outcome.KEPT for s in judged[1:-1])
    assert len(set(parents)) == 1 + moves, ([s.outcome for s in judged], parents)
    _, states = store.run_text(
        "MATCH (a:Attempt {namespace: $ns, run_id: $run})-[:FROM_STATE]->(m:Measurement)-[:OF]->(:Kernel)"
        "<-[:FROM]-(a) RETURN count(a) AS n",
        {"ns": namespace, "run": result.run_id},
        write=False,
    )
    assert states[0]["n"] == len(judged)
    # Every timed measurement is quoted beside the library and the roofline (docs/yardsticks.md).
    assert result.library is not None and result.library.median_ns, result.library
    assert result.best_yardsticks is not None
    assert result.best_yardsticks.speedup_vs_library == pytest.approx(
        result.library.median_ns / result.best_ns
    )
    baseline = client.sent[0].parent_measurement
    assert baseline is not None and baseline.speedup_vs_naive == pytest.approx(1.0)
    kept = [a.child_measurement for a in client.sent if a.outcome == Outcome.KEPT and a.child_measurement]
    assert kept and all(m.library and m.speedup_vs_library and m.roofline_fraction for m in kept)


BAD_SOURCES = {
    Outcome.COMPILE_ERROR: MATMUL_HEAD + "    int i = 0\n    c[i] = a[i];\n}\n",
    Outcome.CRASHED: MATMUL_HEAD + "    *(volatile int*)0 = 1;\n}\n",
    Outcome.TIMEOUT: MATMUL_HEAD + "    for (volatile int i = 0; ; i++) {}\n}\n",
    Outcome.INCORRECT: MATMUL_HEAD + "    memset(c, 0, sizeof(float) * (size_t)n * n);\n}\n",
    Outcome.REJECTED: MATMUL_HEAD + "    static int calls;\n    if (++calls > 1) return;\n}\n",
}


class ScriptedProposer:
    """Returns the bad sources in order, then one good config; remembers what it was told."""

    name = "scripted"

    def __init__(self) -> None:
        self.script = [
            Proposal("unroll", {}, source=src, rationale=f"bad: {o}") for o, src in BAD_SOURCES.items()
        ]
        self.seen_diagnoses: list[str] = []

    def propose(self, context: ProposalContext) -> Proposal | None:
        self.seen_diagnoses.append(context.diagnosis)
        if self.script:
            return self.script.pop(0)
        assert context.config is not None
        # Serial interchange, unrolled and vectorized: a decisive win (ikj alone was once within the keep
        # rule's noise on a quiet machine) that does not depend on a free second core (a loaded machine
        # can make a 2-thread variant no faster, which is not what this test is about).
        change = {"order": "ikj", "unroll": 4, "simd": True}
        return Proposal("interchange", change, config={**context.config, **change})


def test_bad_proposals_are_recorded_and_the_loop_goes_on(
    quick_backend: CBackend, cpu_target: Target, client: InProcessClient, store: GraphStore, namespace: str
) -> None:
    proposer = ScriptedProposer()
    bad = len(BAD_SOURCES)
    result = optimize(get_task("matmul"), quick_backend, cpu_target, proposer, client, budget=bad + 1)
    assert [s.outcome for s in result.steps] == [*BAD_SOURCES, Outcome.KEPT]
    assert all(s.diagnosis for s in result.steps[:bad])
    assert "expected" in proposer.seen_diagnoses[1]  # the compile error's located diagnosis came back
    assert "`calls`" in proposer.seen_diagnoses[bad]  # the admission rejection named the static
    rows = attempts_in_graph(store, namespace, result.run_id)
    assert [r["outcome"] for r in rows] == [o.value for o in [*BAD_SOURCES, Outcome.KEPT]]
    assert all(r["diagnosis"] for r in rows[:bad]) and not any(r["measured"] for r in rows[:bad])
    assert rows[bad]["measured"] and result.speedup > 1.0
    assert (rows[bad]["evaluator_version"], rows[bad]["sandboxed"]) == (EVALUATOR_VERSION, True)


class _OneChange:
    """Proposes one change of the current config, then nothing."""

    name = "one-change"

    def __init__(self, transform: str, change: dict[str, object]) -> None:
        self.transform, self.change, self.proposed = transform, change, False

    def propose(self, context: ProposalContext) -> Proposal | None:
        if self.proposed or context.config is None:
            return None
        self.proposed = True
        return Proposal(self.transform, self.change, config={**context.config, **self.change})


def test_an_attempt_not_judged_is_reported_and_not_recorded(
    quick_backend: CBackend, cpu_target: Target, client: InProcessClient, store: GraphStore, namespace: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:  # fmt: skip
    """Two kernels are compared only on free cores (evaluator 8): on a busy host the comparison is not
    judged, which says nothing of the transform, so the loop reports it and stores
    nothing (a stored failure would count against the transform in every later retrieval)."""
    monkeypatch.setattr(isolated, "runnable_tasks", lambda: 1024)  # every sample: other tasks want every core
    proposer = _OneChange("parallelize", {"parallel": True})
    result = optimize(get_task("matmul"), quick_backend, cpu_target, proposer, client, budget=1)
    (step,) = result.steps
    assert step.outcome == Outcome.DISCARDED and "not judged" in step.diagnosis, step.diagnosis
    assert not step.judged and not step.recorded and result.to_json()["steps"][0]["judged"] is False
    assert (result.not_judged, result.unrecorded) == (1, 0)
    assert attempts_in_graph(store, namespace, result.run_id) == []


def test_a_kept_parent_is_held_to_the_fastest_its_code_was_timed_at(
    quick_backend: CBackend, cpu_target: Target, client: InProcessClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A parent's time is what its code chooses (`loop.PARENT_SLOWDOWN_MAX`): the loop gives
    `evaluate` no mark for the trusted baseline, the kept candidate's own median once it is the
    parent, and the parent's faster median of a later judged comparison from then on (a slower one,
    or one of a comparison not judged, leaves the mark). The evaluations are scripted; the
    baseline is really timed."""
    task = get_task("matmul")
    template = quick_backend.profile(task, task.source("c", task.baseline_config), cpu_target)
    # (candidate median, parent median, judged) per step: kept at step 0, then its code timed as the
    # parent at 120 us, at 50 us in a comparison not judged (by a rule: not evaluated again), at 80 us
    script = iter([(100_000.0, 200_000.0, True), (90_000.0, 120_000.0, True), (95_000.0, 50_000.0, False),
                   (95_000.0, 80_000.0, True), (95_000.0, 85_000.0, True)])  # fmt: skip
    marks: list[float | None] = []

    def scripted(*_: object, parent_mark_ns: float | None = None, **__: object) -> Evaluation:
        marks.append(parent_mark_ns)
        median, parent, judged = next(script)
        profile = replace(template, median_ns=median, parent_median_ns=parent)
        if len(marks) == 1:
            return Evaluation(Outcome.KEPT, "", profile, parent / median)
        return Evaluation(Outcome.DISCARDED, "" if judged else "not judged: scripted", profile, judged=judged)

    monkeypatch.setattr(loop, "evaluate", scripted)
    result = optimize(task, quick_backend, cpu_target, MemorylessProposer(seed=5), client, budget=5,
                      final_check=False)  # fmt: skip
    assert [s.outcome for s in result.steps] == [Outcome.KEPT] + [Outcome.DISCARDED] * 4
    assert result.not_judged == 1
    assert marks == [None, 100_000.0, 100_000.0, 100_000.0, 80_000.0]


def test_a_comparison_the_host_left_unjudged_is_evaluated_once_more(
    quick_backend: CBackend, cpu_target: Target, client: InProcessClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A step whose comparison the host left unjudged (cores not free, steal) is evaluated once more
    (`loop.UNJUDGED_RETRIES`): judged then, it is an attempt like any other; not judged twice, the
    step is not judged. One not judged by a rule on times the kernels chose (a parent over its mark,
    a pair the figures contradict) is not: a second draw would be the kernels' to use (the twelfth
    adversary, results/redteam-stop49). Scripted evaluations; the baseline is really timed."""
    task = get_task("matmul")
    template = quick_backend.profile(task, task.source("c", task.baseline_config), cpu_target)
    # (judged, by the host) per evaluation: step 0; step 1 twice; step 2 twice; step 3 once
    each = iter([(True, False), (False, True), (True, False), (False, True), (False, True), (False, False)])
    calls: list[int] = []

    def scripted(*_: object, **__: object) -> Evaluation:
        calls.append(1)
        judged, host = next(each)
        why = "" if judged else "not judged: scripted"
        return Evaluation(Outcome.DISCARDED, why, template, judged=judged, host_busy=host)

    monkeypatch.setattr(loop, "evaluate", scripted)
    result = optimize(task, quick_backend, cpu_target, MemorylessProposer(seed=5), client, budget=4,
                      final_check=False)  # fmt: skip
    assert len(calls) == 6
    assert [s.judged for s in result.steps] == [True, True, False, False]
    assert result.not_judged == 2 and [s.recorded for s in result.steps] == [True, True, False, False]


@pytest.mark.parametrize("failure", [Outcome.INCORRECT, Outcome.CRASHED, Outcome.TIMEOUT])
def test_a_candidates_failure_in_its_confirmation_is_its_own(failure: Outcome) -> None:
    """A candidate that fails in its comparison with the baseline (a wrong output, a crash, a
    timeout: what its code chooses) fails, judged, as it would in any comparison; only the host's
    refusal leaves the confirmation unjudged. Before, any failure there was "not judged": a kernel
    could veto the draws it was losing and leave no trace (the twelfth adversary)."""
    won = Evaluation(Outcome.KEPT, "", _timed(100, 110), 1.1)
    failed = replace(_timed(100, 220), outcome=failure, reason="while timed: call 8 wrong")
    backend = type("Scripted", (), {"profile": lambda *_, **__: failed})()
    verdict = loop._confirm(won, get_task("rmsnorm"), backend, None, "candidate", "baseline", 2.0, 0.02)  # type: ignore[arg-type]
    assert verdict.outcome == failure and verdict.judged and verdict.profile is None, verdict
    busy = replace(failed, outcome=Outcome.DISCARDED, judged=False, reason="not judged: cores not free")
    backend = type("Scripted", (), {"profile": lambda *_, **__: busy})()
    verdict = loop._confirm(won, get_task("rmsnorm"), backend, None, "candidate", "baseline", 2.0, 0.02)  # type: ignore[arg-type]
    assert not verdict.judged and verdict.host_busy, verdict


def test_a_kept_kernel_is_confirmed_against_the_baseline_by_its_own_speedup_over_it(
    quick_backend: CBackend, cpu_target: Target, client: InProcessClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A gain over a model-written parent is confirmed against the baseline (`loop._confirm`): the loop
    gives `evaluate` no baseline to confirm against while the parent is the baseline itself, and
    afterwards the baseline's source with the parent's speedup over it: its speedup when it was kept
    against the baseline, then the one its own confirmation measured; a gain over a model-written
    parent counts in the run's figure no more than the two figures show. Scripted; the baseline is
    really timed."""
    task = get_task("matmul")
    baseline = task.source("c", task.baseline_config)
    template = quick_backend.profile(task, baseline, cpu_target)
    asked: list[tuple[bool, float | None]] = []
    kept = iter([Evaluation(Outcome.KEPT, "", replace(template, median_ns=100e3, parent_median_ns=200e3), 2.0),
                 Evaluation(Outcome.KEPT, "", replace(template, median_ns=100e3, parent_median_ns=110e3), 1.1,
                            over_baseline=2.1)])  # fmt: skip

    def scripted(*_: object, baseline_source: str | None = None, parent_over_baseline: float | None = None,
                 **__: object) -> Evaluation:  # fmt: skip
        asked.append((baseline_source == baseline, parent_over_baseline))
        return next(kept, Evaluation(Outcome.DISCARDED, "", template))

    monkeypatch.setattr(loop, "evaluate", scripted)
    result = optimize(
        task, quick_backend, cpu_target, MemorylessProposer(seed=5), client, budget=3, final_check=False
    )
    assert asked == [(False, None), (True, 2.0), (True, 2.1)]
    # the second gain counts as its figures show it (2.1 over 2.0), not as its pair ratio (1.1)
    assert result.chained_speedup == pytest.approx(2.0 * 1.05) and result.steps[1].speedup == 1.1


def _timed(median_us: float, other_us: float) -> ProfileResult:
    """A comparison as the backend reports it: medians, and tight paired ratios at their ratio."""
    return ProfileResult(median_ns=median_us * 1e3, iqr_ns=0.0, trials=40, counters={}, counter_source="cachegrind",
                         parent_median_ns=other_us * 1e3, paired_ratios=(other_us / median_us,) * 40)  # fmt: skip


@pytest.mark.parametrize(
    ("pair", "against_baseline", "parent_figure", "kept", "over_baseline", "judged"),
    [
        # honest: 1.1x its parent, and its speed 1.1 times the parent's figure over the baseline
        ((100, 110), [(100, 220)], 2.0, Outcome.KEPT, 2.2, True),
        # its confirmation a little slower than the comparison it won: its figure is the faster one's
        ((100, 150), [(104, 220)], 1.3, Outcome.KEPT, 2.2, True),
        # 8% slower there, 1% in a second confirmation: the gain agrees with the faster one
        ((100, 200), [(108, 400), (101, 400)], 2.0, Outcome.KEPT, 4.0, True),
        # 8% slower in both: the gain over the parent is not what the candidate shows against trusted code
        ((100, 200), [(108, 400)], 2.0, Outcome.DISCARDED, None, False),
        # the ladder: the parent's figure sandbagged (40% against the baseline), the parent 13% slower
        # as a parent, the candidate 30% slower against the baseline: not above the parent's pair figure
        ((100, 113), [(130, 220)], 220 / 140, Outcome.DISCARDED, None, True),
        # its last generation, 10% slower against the baseline: above the bar (2.0 over 1.947 x 1.02), but
        # 1.027x by the speeds, not the pair's 1.13x (kept when the pair's own time counted: stop 49)
        ((100, 113), [(110, 220)], 220 / 140, Outcome.DISCARDED, None, False),
        # 1.2x its parent, but 1.05x by the speeds: the parent slower against it than the baseline
        ((100, 120), [(100, 220)], 2.1, Outcome.DISCARDED, None, False),
    ],
    ids=[
        "honest",
        "slower-confirmation",
        "much-slower-confirmation-then-not",
        "much-slower-confirmation-twice",
        "sandbagged-figure",
        "ladder-last-generation",
        "parent-slower-against-its-child",
    ],
)
def test_a_gain_is_confirmed_against_the_fastest_figures_and_must_agree_with_them(
    pair: tuple[float, float],
    against_baseline: list[tuple[float, float]],
    parent_figure: float,
    kept: Outcome,
    over_baseline: float | None,
    judged: bool,
) -> None:
    """`loop._confirm` (the tenth adversary, results/redteam-stop48): the candidate's speed over the
    baseline is the fastest it showed against it (a second confirmation where the first does not
    agree with the gain), a parent's figure at least what its time in the pair says, and a pair
    ratio above their ratio by more than PAIR_BEYOND_BASELINE_MAX is not judged; the figure stored
    is the fastest the candidate showed anywhere. Scripted: the comparisons' medians in us
    (candidate, the other), the last repeated."""
    won = Evaluation(Outcome.KEPT, "", _timed(*pair), pair[1] / pair[0])
    comparisons = [_timed(*c) for c in against_baseline]
    backend = type("Scripted", (), {"profile": lambda *_, **__: comparisons.pop(0) if len(comparisons) > 1 else comparisons[0]})()  # fmt: skip
    verdict = loop._confirm(
        won, get_task("rmsnorm"), backend, None, "candidate", "baseline", parent_figure, 0.02
    )  # type: ignore[arg-type]
    assert verdict.outcome == kept, verdict.reason
    assert verdict.over_baseline == (pytest.approx(over_baseline) if over_baseline else None)
    assert ("not judged" not in verdict.reason) == judged, verdict.reason


def _timed_with_baseline(
    medians_us: tuple[float, float, float], spread: tuple[float, ...] = (1.0,)
) -> ProfileResult:
    """A comparison of three kernels as the backend reports it (candidate, parent, baseline medians in
    us): 40 rounds, each round's two ratios the medians' ratios times one of `spread` in turn (the
    same round's candidate call under both ratios)."""
    cand, parent, base = (m * 1e3 for m in medians_us)
    factors = [spread[i % len(spread)] for i in range(40)]
    return ProfileResult(median_ns=cand, iqr_ns=0.0, trials=40, counters={}, counter_source="cachegrind",
                         parent_median_ns=parent, paired_ratios=tuple(parent / cand * f for f in factors),
                         reference_median_ns=base, reference_ratios=tuple(base / cand * f for f in factors))  # fmt: skip


@pytest.mark.parametrize(
    ("comparisons", "parent_figure", "kept", "over_baseline", "judged"),
    [
        # 1.1x its parent and 1.1 times the parent's figure over the baseline, in the same rounds
        ([(100, 110, 220)], 2.0, Outcome.KEPT, 2.2, True),
        # the host 50% slower in this comparison: every kernel alike, the ratios as before
        ([(150, 165, 330)], 2.0, Outcome.KEPT, 2.2, True),
        # an identical copy against its parent 8% slower as a parent (under the mark): no faster than
        # the parent's figure against the baseline
        ([(100, 108, 200)], 2.0, Outcome.DISCARDED, None, True),
        # the parent faster against the baseline in these rounds than its figure: the figure is raised
        # to it, and the speed over it is the gain over the parent (kept at its own speed, 2.26x)
        ([(100, 103, 226)], 2.0, Outcome.KEPT, 2.26, True),
        # 1.2x its parent but 1.05x by the speeds: the parent ran 12% under its figure here
        ([(100, 120, 220)], 2.1, Outcome.DISCARDED, None, False),
        # not faster than its parent by the keep bar
        ([(100, 101, 220)], 2.0, Outcome.DISCARDED, None, True),
        # promising but unproven (half its rounds 1.0x, half 1.2x), then proven with a second measurement
        ([((100, 110, 220), (1.0 / 1.1, 1.2 / 1.1)), (100, 110, 220)], 2.0, Outcome.KEPT, 2.2, True),
    ],
    ids=[
        "honest",
        "slow-host",
        "identical-copy",
        "parent-faster-here",
        "parent-slower-here",
        "no-gain",
        "pooled",
    ],
)
def test_a_gain_over_a_model_written_parent_is_decided_in_one_comparison_with_the_baseline(
    comparisons: list[Any], parent_figure: float, kept: Outcome, over_baseline: float | None, judged: bool
) -> None:
    """`loop._decide_beside_baseline` (`BASELINE_IN_THE_COMPARISON`): the baseline is the third kernel
    of the comparison, so the candidate's gain over its parent, its speed over the baseline and the
    parent's speed over the baseline come from the same rounds, and a host that slows down between
    comparisons moves none of them. Scripted comparisons: (candidate, parent, baseline) medians in us,
    or with the spread of their rounds; the last repeated."""
    profiles = [
        _timed_with_baseline(*c) if isinstance(c[0], tuple) else _timed_with_baseline(c) for c in comparisons
    ]
    asked: list[tuple[str | None, str | None]] = []

    def profile(
        *_: object, parent_source: str | None = None, reference_source: str | None = None
    ) -> ProfileResult:
        asked.append((parent_source, reference_source))
        return profiles.pop(0) if len(profiles) > 1 else profiles[0]

    first = Evaluation(Outcome.KEPT, "", profile(parent_source="parent", reference_source="baseline"))
    backend = type("Scripted", (), {"profile": staticmethod(profile)})()
    verdict = loop._decide_beside_baseline(
        first, get_task("rmsnorm"), backend, None, "candidate", "parent", "baseline", parent_figure, 0.02
    )  # type: ignore[arg-type]
    assert verdict.outcome == kept, verdict.reason
    assert verdict.over_baseline == (pytest.approx(over_baseline) if over_baseline else None)
    assert ("not judged" not in verdict.reason) == judged, verdict.reason
    assert len(asked) == len(comparisons) and set(asked) == {("parent", "baseline")}, asked
    stored = first.profile
    assert stored is not None and stored.parent_median_ns
    if kept == Outcome.KEPT:  # the first measurement's pair, as stored
        assert verdict.speedup == pytest.approx(stored.parent_median_ns / stored.median_ns)


def test_a_host_that_slowed_down_since_the_parent_was_timed_does_not_refuse_an_honest_gain(
    quick_backend: CBackend, cpu_target: Target, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The parent mark compares a parent's median with one taken earlier in the run, so a host that
    slowed down in between refused honest gains (9 of 80 steps at stop 50, parents 32-172% over their
    marks: results/stop50/unjudged-rule3-second-confirmation.log). Timed beside the baseline
    (`BASELINE_IN_THE_COMPARISON` on; off by default, for the reason docs/sandbox.md gives), the
    parent's speed is read against trusted code in the same rounds, where the host's speed cancels.
    Real kernels: rmsnorm's baseline code as a model-written parent whose mark says it once ran twice
    as fast as it does now, and a faster config. Control, the default (a confirmation of its own):
    the mark refuses the gain, not judged."""
    task = get_task("rmsnorm")
    baseline = task.source("c", task.baseline_config)
    parent = baseline.replace("void kernel(", "/* a model's copy */\nvoid kernel(", 1)
    faster = task.source(
        "c", {**task.baseline_config, "acc": 8, "simd": True, "unroll": 4, "recip": "reciprocal"}
    )
    # its mark as if the host had been twice as fast when its code was timed
    mark_ns = quick_backend.profile(task, parent, cpu_target).median_ns / 2
    monkeypatch.setattr(loop, "BASELINE_IN_THE_COMPARISON", True)

    def evaluated() -> Evaluation:
        # A comparison the host left unjudged (its cores not free) is no answer here: asked again.
        return when_the_host_was_quiet(
            lambda: loop.evaluate(task, quick_backend, cpu_target, faster, parent, parent_mark_ns=mark_ns,
                                  baseline_source=baseline, parent_over_baseline=1.0)
        )  # fmt: skip

    beside = evaluated()
    assert beside.outcome == Outcome.KEPT and beside.judged, beside.reason
    assert beside.over_baseline and beside.over_baseline > 1.2, beside.over_baseline
    monkeypatch.setattr(loop, "BASELINE_IN_THE_COMPARISON", False)
    apart = evaluated()
    assert not apart.judged and "the parent ran" in apart.reason, apart.reason


def test_the_baseline_is_timed_beside_a_model_written_parent_where_the_backend_can(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """`evaluate` asks the backend for the baseline as a third kernel only over a model-written parent
    (a figure over the baseline given); a backend that times two kernels (no reference ratios) is
    confirmed in a comparison of its own, as is every backend with `BASELINE_IN_THE_COMPARISON` off
    (the default)."""
    task = get_task("rmsnorm")
    asked: list[str | None] = []

    class Scripted:
        three = True

        def compile(self, *_: object) -> Any:
            return CompileResult(ok=True, artifact="-")

        def check(self, *_: object, **__: object) -> Any:
            return CheckResult(Outcome.KEPT)

        def profile(self, _task: object, source: str, _target: object, parent_source: str | None = None,
                    reference_source: str | None = None) -> ProfileResult:  # fmt: skip
            asked.append(reference_source)
            if source == "candidate" and parent_source == "baseline":  # a separate confirmation
                return _timed(100, 220)
            if reference_source is not None and self.three:
                return _timed_with_baseline((100, 110, 220))
            return _timed(100, 110)

    backend = Scripted()
    monkeypatch.setattr(loop, "BASELINE_IN_THE_COMPARISON", True)
    trusted = loop.evaluate(task, backend, None, "candidate", "baseline")  # type: ignore[arg-type]
    assert trusted.outcome == Outcome.KEPT and asked == [None], asked
    asked.clear()
    beside = loop.evaluate(task, backend, None, "candidate", "parent", baseline_source="baseline",
                           parent_over_baseline=2.0)  # type: ignore[arg-type]  # fmt: skip
    assert beside.outcome == Outcome.KEPT and beside.over_baseline == pytest.approx(2.2), beside.reason
    assert asked == ["baseline"], asked  # one comparison of three kernels, nothing after it
    for three, flag in ((False, True), (True, False)):
        asked.clear()
        backend.three = three
        monkeypatch.setattr(loop, "BASELINE_IN_THE_COMPARISON", flag)
        apart = loop.evaluate(task, backend, None, "candidate", "parent", baseline_source="baseline",
                              parent_over_baseline=2.0)  # type: ignore[arg-type]  # fmt: skip
        assert apart.outcome == Outcome.KEPT and apart.over_baseline == pytest.approx(2.2), apart.reason
        assert asked == (["baseline", None] if flag else [None, None]), (
            asked
        )  # the pair, then its confirmation


def test_evaluations_on_one_machine_take_turns_at_timing(quick_backend: CBackend, cpu_target: Target) -> None:
    """Two comparisons timed at once would take each other's cores (and be refused): a profile waits
    while another process of this machine holds the timing turn (here this test, by its own lock)."""
    task = get_task("rmsnorm")
    source = task.source("c", task.baseline_config)
    done: list[ProfileResult] = []
    fd = os.open(isolated.TIMING_LOCK, os.O_RDONLY | os.O_CREAT, 0o666)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        waiting = threading.Thread(
            target=lambda: done.append(quick_backend.profile(task, source, cpu_target))
        )
        waiting.start()
        waiting.join(timeout=3.0)
        assert waiting.is_alive() and not done, "the profile did not wait for its turn"
    finally:
        os.close(fd)
    waiting.join(timeout=60.0)
    assert done and done[0].outcome == Outcome.KEPT, done


def test_triton_without_a_gpu_records_static_attempts_and_keeps_nothing(
    client: InProcessClient, store: GraphStore, namespace: str
) -> None:
    import torch

    from kernelgraph.agent.backends.triton import TritonBackend
    from kernelgraph.agent.targets import get_target

    if torch.cuda.is_available():
        pytest.skip("with a GPU the Triton path is timed for real")
    result = optimize(get_task("softmax", "triton"), TritonBackend(), get_target("cuda-sm90"),
                      MemorylessProposer(seed=1), client, budget=2, seed=1)  # fmt: skip
    assert result.static_only and result.to_json()["speedup"] is None
    assert result.outcomes["kept"] == 0 and result.attempts == 2
    _, rows = store.run_text(
        "MATCH (a:Attempt {namespace: $ns, run_id: $run})-[:RESULTED_IN]->(m:Measurement) "
        "RETURN m.static AS static, m.median_ns AS median, m.counter_source AS source, "
        "m.signature_missing AS missing, a.outcome AS outcome",
        {"ns": namespace, "run": result.run_id}, write=False,
    )  # fmt: skip
    assert len(rows) == 2
    for row in rows:
        assert row["static"] is True and row["median"] is None and row["source"] == "nvidia_static"
        assert "register_pressure" not in row["missing"] and row["outcome"] == "discarded"
