"""Consolidation's rules on plain values: noise, contradictions, version weights (no Neo4j)."""

from __future__ import annotations

import math

import pytest

from kernelgraph.service.consolidation import State, plan_merges
from kernelgraph.service.consolidation_rules import (
    NOISE_FLOOR,
    SEPARATE_BUILD_WEIGHT,
    STALE_SIGNATURE_WEIGHT,
    SUPERSEDED_EVALUATOR_WEIGHT,
    AttemptEvidence,
    ContradictionKind,
    attempt_noise,
    current_evaluator,
    find_contradiction,
    same_state,
    summarize,
    version_weight,
)


def ev(key: str, gain: float | None, outcome: str = "kept", child: str = "c1", noise: float = NOISE_FLOOR,
       version: int | None = 2) -> AttemptEvidence:  # fmt: skip
    return AttemptEvidence(key, outcome, gain, child, noise, version)


def test_noise_comes_from_both_timings_and_never_drops_below_the_floor() -> None:
    assert attempt_noise(1e6, 1e3, 5e5, 5e2) == NOISE_FLOOR  # tight timings: the floor
    wide = attempt_noise(1e6, 0.2 * 1.349e6, 1e6, 0.2 * 1.349e6)
    assert wide == pytest.approx(math.hypot(0.2, 0.2))
    assert attempt_noise(None, None, None, None) == NOISE_FLOOR


def test_repeated_agreeing_evidence_is_summarized_not_flagged() -> None:
    group = [ev("a", 0.40), ev("b", 0.45), ev("c", 0.35, outcome="kept")]
    assert find_contradiction(group) is None
    summary = summarize(group)
    assert summary.attempts == 3 and summary.ran == 3
    assert summary.mean_log_speedup == pytest.approx(0.40)
    assert summary.sd_log_speedup == pytest.approx(0.05)


def test_helps_and_hurts_beyond_noise_is_a_speedup_contradiction() -> None:
    found = find_contradiction([ev("a", 0.5), ev("b", -0.4, outcome="discarded"), ev("c", 0.45)])
    assert found is not None
    assert found.kinds == (ContradictionKind.SPEEDUP,)
    assert (found.helps, found.hurts) == (2, 1)
    assert found.attempt_keys == ("a", "b", "c")


def test_disagreement_within_noise_is_not_a_contradiction() -> None:
    # +10% and -10% with 5% noise each: neither is beyond 3 sd of zero.
    assert find_contradiction([ev("a", 0.10), ev("b", -0.10, outcome="discarded")]) is None
    # Beyond noise only because the noise is small: with wide timings the same numbers agree.
    assert find_contradiction([ev("a", 0.5, noise=0.3), ev("b", -0.5, "discarded", noise=0.3)]) is None


def test_the_same_child_failing_after_running_is_an_outcome_contradiction() -> None:
    found = find_contradiction([ev("a", 0.3, child="k1"), ev("b", None, outcome="incorrect", child="k1")])
    assert found is not None and found.kinds == (ContradictionKind.OUTCOME,)
    assert found.failed_twins == 1
    # A different child (an LLM wrote other source under the same transform) is not a contradiction.
    assert (
        find_contradiction([ev("a", 0.3, child="k1"), ev("b", None, outcome="incorrect", child="k2")]) is None
    )


def test_old_and_new_evaluators_disagreeing_is_not_a_contradiction() -> None:
    group = [ev("old", 0.9, version=1), ev("new", -0.5, outcome="discarded", version=2)]
    assert find_contradiction(group) is None


def test_the_fingerprint_changes_only_with_the_attempts() -> None:
    first = find_contradiction([ev("a", 0.5), ev("b", -0.5, "discarded")])
    again = find_contradiction([ev("b", -0.5, "discarded"), ev("a", 0.5)])
    grown = find_contradiction([ev("a", 0.5), ev("b", -0.5, "discarded"), ev("c", 0.6)])
    assert first is not None and again is not None and grown is not None
    assert first.fingerprint == again.fingerprint != grown.fingerprint


def test_version_weights() -> None:
    common = {"counter_source": "cpu_cachegrind", "current_signature": 2}
    assert version_weight(evaluator_version=2, signature_version=2, newest_evaluator=2, **common) == 1.0
    assert version_weight(evaluator_version=None, signature_version=2, newest_evaluator=2, **common) == (
        SUPERSEDED_EVALUATOR_WEIGHT
    )
    assert version_weight(evaluator_version=1, signature_version=1, newest_evaluator=2, **common) == (
        SUPERSEDED_EVALUATOR_WEIGHT * STALE_SIGNATURE_WEIGHT
    )
    # Published timings were measured by no evaluator of ours.
    imported = {"counter_source": "kernelbench_timing", "current_signature": 2}
    assert version_weight(evaluator_version=None, signature_version=2, newest_evaluator=2, **imported) == 1.0
    # A namespace of imports only has no newest evaluator: nothing is superseded.
    assert version_weight(evaluator_version=None, signature_version=2, newest_evaluator=None, **common) == 1.0
    assert current_evaluator([None, 1, 2, None]) == 2 and current_evaluator([None]) is None
    # Cache counters of a separate build (schema 0014) count less even when nothing newer measured.
    assert version_weight(evaluator_version=2, signature_version=2, newest_evaluator=2,
                          counters_separate_build=True, **common) == SEPARATE_BUILD_WEIGHT  # fmt: skip
    assert version_weight(evaluator_version=2, signature_version=2, newest_evaluator=3,
                          counters_separate_build=True, **common) == (
        SEPARATE_BUILD_WEIGHT * SUPERSEDED_EVALUATOR_WEIGHT
    )  # fmt: skip


def state(mid: str, signature: float, merged_into: str | None = None, kernel: str = "k") -> State:
    return State(mid, kernel, "cpu", "matmul", "cpu_cachegrind", 2, 1, merged_into, None, (signature,) * 4)


def test_re_measurements_within_noise_merge_and_other_sizes_stay_apart() -> None:
    states = [
        state("m3", 0.50),
        state("m1", 0.51),
        state("m2", 0.90),
        state("m4", 0.905),
        state("x", 0.5, kernel="o"),
    ]
    canonical, rows, groups, already = plan_merges(states)
    assert rows == [{"duplicate": "m3", "canonical": "m1"}, {"duplicate": "m4", "canonical": "m2"}]
    assert (groups, already) == (1, 0)
    assert canonical["m3"] == "m1" and canonical["x"] == "x"


def test_a_later_run_keeps_the_states_earlier_runs_merged_into() -> None:
    # m0 arrived after m5 was chosen: it joins m5 rather than taking over as the smallest id.
    states = [state("m5", 0.5), state("m6", 0.5, merged_into="m5"), state("m0", 0.5)]
    canonical, rows, _, already = plan_merges(states)
    assert rows == [{"duplicate": "m0", "canonical": "m5"}] and already == 1
    assert canonical == {"m5": "m5", "m6": "m5", "m0": "m5"}
    # A second pass over the result plans nothing.
    merged = [state("m5", 0.5), state("m6", 0.5, merged_into="m5"), state("m0", 0.5, merged_into="m5")]
    assert plan_merges(merged)[1] == []


def test_re_measurements_merge_on_the_dimensions_they_measured_renormalised() -> None:
    """Signature version 2 masks what was not measured: states that measured other dimensions are not
    one state, and the distance over the measured ones is renormalised as neighbour search's is."""
    full = (0.5,) * 4
    assert same_state(full, full, (0, 1, 2, 3), (0, 1, 2, 3))
    # One measured a dimension the other did not (0.0 stored there): never the same state.
    assert not same_state((0.5, 0.5, 0.5, 0.0), (0.5, 0.5, 0.5, 0.0), (0, 1, 2), (0, 1, 2, 3))
    assert not same_state(full, full, (), ())
    # A difference on one of two measured dimensions counts x 4 / 2: 0.03^2 x 2 = 0.0018 ... 0.2^2 x 2 = 0.08.
    assert same_state((0.5, 0.5, 0.0, 0.0), (0.53, 0.5, 0.0, 0.0), (0, 1), (0, 1))
    assert not same_state((0.5, 0.5, 0.0, 0.0), (0.7, 0.5, 0.0, 0.0), (0, 1), (0, 1))
    # The same difference over all four dimensions, unrenormalised, would merge (0.04 <= 0.05).
    assert same_state((0.5, 0.5, 0.0, 0.0), (0.7, 0.5, 0.0, 0.0))
    states = [
        State("a1", "k", "cpu", "matmul", "cpu_cachegrind", 2, 2, None, None, full, (0, 1, 2, 3)),
        State("a2", "k", "cpu", "matmul", "cpu_cachegrind", 2, 2, None, None, full, (0, 1, 2, 3)),
        State("a3", "k", "cpu", "matmul", "cpu_cachegrind", 2, 2, None, None, full, (0, 1, 2)),
    ]
    assert plan_merges(states)[1] == [{"duplicate": "a2", "canonical": "a1"}]
