"""The llm proposer's evidence: ranked, deduplicated, bounded whatever the amount retrieved."""

from __future__ import annotations

from typing import Any

from kernelgraph.agent.proposers.llm import MAX_EVIDENCE_CHARS, evidence_items, format_evidence, rank_evidence
from kernelgraph.core.models import ParamEvidence, RetrievedTransform


def row(
    transform: str, score: float, settings: list[dict[str, Any]], disputed: int = 0
) -> RetrievedTransform:
    by_params = [ParamEvidence(**s) for s in settings]
    attempts = sum(s["attempts"] for s in settings)
    return RetrievedTransform(
        transform=transform, score=score, attempts=attempts, successes=sum(s["successes"] for s in settings),
        success_rate=0.5, weighted_log_speedup=score, confidence=0.5, evidence_weight=float(attempts),
        mean_similarity=0.9, same_target_attempts=attempts, other_target_attempts=0, best_speedup=2.0,
        best_example={"speedup": 2.0, "task": "softmax", "params": {}}, params=[], by_params=by_params,
        evidence_measurement_ids=["m"] * attempts, evidence_attempt_keys=["a"] * attempts, disputed=disputed,
    )  # fmt: skip


def setting(
    params: dict[str, Any], gain: float, attempts: int = 3, weight: float = 2.0, **extra: Any
) -> dict[str, Any]:
    return {"params": params, "attempts": attempts, "successes": attempts if gain > 0 else 0, "weight": weight,
            "weighted_log_speedup": gain, **extra}  # fmt: skip


def test_best_setting_of_each_transform_first_in_score_order_then_the_rest() -> None:
    evidence = {
        "tile": row("tile", 0.2, [setting({"t": 16}, 0.1), setting({"t": 64}, 0.4)]),
        "unroll": row("unroll", 0.5, [setting({"f": 4}, 0.6), setting({"f": 16}, -0.9, weight=5.0)]),
    }
    ranked = rank_evidence(evidence_items(evidence))
    assert [(i.transform, i.params) for i in ranked] == [
        ("unroll", {"f": 4}), ("tile", {"t": 64}), ("unroll", {"f": 16}), ("tile", {"t": 16}),
    ]  # fmt: skip
    text = format_evidence(evidence)
    assert text.splitlines()[0].startswith("- unroll {f: 4}: 1.82x mean")
    assert "best 2.00x on softmax" in text.splitlines()[0]


def test_duplicate_settings_are_merged() -> None:
    evidence = {
        "tile": row("tile", 0.2, [setting({"t": 16}, 0.2, weight=1.0), setting({"t": 16}, 0.4, weight=3.0)])
    }
    items = evidence_items(evidence)
    assert len(items) == 1
    assert items[0].attempts == 6 and items[0].weight == 4.0
    assert abs(items[0].log_speedup - 0.35) < 1e-9


def test_disputed_evidence_is_marked() -> None:
    evidence = {"tile": row("tile", 0.2, [setting({"t": 16}, 0.2, disputed=True, sd_log_speedup=0.6)])}
    text = format_evidence(evidence)
    assert "DISPUTED" in text and "spread x1.82" in text


def test_the_evidence_never_exceeds_its_budget_however_much_is_retrieved() -> None:
    evidence = {
        f"t{i}": row(f"t{i}", 1.0 / (i + 1), [setting({"p": j, "long_parameter_name": "x" * 20}, 0.1 * j) for j in range(30)])
        for i in range(40)
    }  # fmt: skip
    text = format_evidence(evidence)
    assert len(text) <= MAX_EVIDENCE_CHARS
    assert text.splitlines()[-1].endswith("more settings left out)")
    assert text.splitlines()[0].startswith("- t0 ")
    small = format_evidence({"t0": evidence["t0"]}, max_chars=300)
    assert len(small) <= 300
    assert format_evidence({}) == "(no evidence retrieved for this measured state)"
