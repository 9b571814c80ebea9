"""The drop rule and the standardisation rule of `kernelgraph bench signature`
(kernelgraph/bench/signature.py), as docs/counter-signature.md wrote them, on states whose two
measurements are made up to test each clause."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from kernelgraph.agent.tasks import get_task
from kernelgraph.bench.landscapes import config_key
from kernelgraph.bench.signature import (
    CANDIDATES,
    SCALE_FLOOR,
    Pair,
    _distance,
    apply_rule,
    correlations,
    dimension_scales,
    dimension_stats,
    distance_shares,
    similarity_by_relation,
)
from kernelgraph.core.signature import (
    CPU_DIMENSION_SCALES,
    CPU_DIMENSIONS_KEPT,
    CPU_SIMILARITY_UNIT,
    SIGNATURE_DIM,
    THREAD_SHARE,
    UNJUDGED_SIMILARITY_UNIT,
)

SCALES_REPORT = "signature-20261202T145436Z.json"  # the report core/signature.py names


def _pairs(n: int = 30) -> list[Pair]:
    rng = random.Random(3)
    pairs = []
    for i in range(n):
        true_memory, true_compute = rng.uniform(0.05, 0.9), rng.uniform(0.0, 0.3)
        state = {name: 0.5 for name in CANDIDATES}  # everything else: constant (no spread)
        first, second = dict(state), dict(state)
        for m in (first, second):
            m["memory_fraction"] = true_memory + rng.gauss(0, 0.01)  # informative, quiet
            m["speed_of_light"] = m["memory_fraction"]  # the same number again: redundant
            m["parallel_efficiency"] = rng.uniform(0.0, 1.0)  # pure noise: retest disagrees
            m["thread_share"] = 0.5 if i % 2 else 1.0  # deterministic, varies
            m["compute_fraction"] = true_compute + rng.gauss(0, 0.002)  # informative, unrelated
        first["l1_miss_rate"] = second["l1_miss_rate"] = None  # unmeasured
        pairs.append(Pair(f"i{i % 3}", f"c{i}", first, second, 1.0))
    return pairs


def test_each_clause_of_the_rule() -> None:
    pairs = _pairs()
    stats = dimension_stats(pairs)
    assert stats["memory_fraction"]["noise"] < 0.02 < stats["memory_fraction"]["spread"]
    verdicts = apply_rule(stats, correlations(pairs, CANDIDATES))
    assert verdicts["compute_fraction"] == verdicts["memory_fraction"] == verdicts["thread_share"] == "kept"
    assert verdicts["parallel_efficiency"].startswith("dropped: noise")
    assert verdicts["ridge_position"] == "dropped: no spread between states"
    assert verdicts["l1_miss_rate"].startswith("dropped: measured on 0 states")
    # speed_of_light repeats memory_fraction and comes later in the order: it goes, memory stays.
    assert (
        verdicts["speed_of_light"].startswith("dropped: |r| = ")
        and "memory_fraction" in verdicts["speed_of_light"]
    )


def test_of_two_readings_of_one_dimension_at_most_one_stays() -> None:
    pairs = _pairs()
    for p in pairs:  # parallel_efficiency now informative and quiet too
        for m in (p.first, p.second):
            m["parallel_efficiency"] = 0.25 if p.config.endswith(("0", "2", "4", "6", "8")) else 0.9
    verdicts = apply_rule(dimension_stats(pairs), correlations(pairs, CANDIDATES))
    assert verdicts["parallel_efficiency"] == "kept"
    assert verdicts["thread_share"] == "dropped: parallel_efficiency reads the same dimension and stays"


def test_each_kept_dimension_is_scaled_by_its_spread_never_below_the_floor() -> None:
    pairs = _pairs()
    for p in pairs:  # a dimension that barely varies: its spread is far below the floor
        p.first["issue_efficiency"] = p.second["issue_efficiency"] = 0.5 + 1e-4 * (int(p.config[1:]) % 2)
    stats = dimension_stats(pairs)
    kept = ["compute_fraction", "memory_fraction", "thread_share", "issue_efficiency"]
    scales = dimension_scales(stats, kept)
    assert scales["memory_fraction"] == stats["memory_fraction"]["spread"] > SCALE_FLOOR
    assert scales["compute_fraction"] == stats["compute_fraction"]["spread"]
    assert stats["issue_efficiency"]["spread"] < SCALE_FLOOR and scales["issue_efficiency"] == SCALE_FLOOR
    # Raw, the wider dimension outweighs the narrower; scaled by their spreads, the dimensions measured
    # on every state share them equally; the floored one stays below its equal share.
    raw = distance_shares(pairs, kept)
    scaled = distance_shares(pairs, kept, scales)
    assert raw["memory_fraction"] > 5 * raw["compute_fraction"]
    for name in ("compute_fraction", "memory_fraction", "thread_share"):
        assert scaled[name] == pytest.approx(scaled["memory_fraction"], rel=1e-9)
    assert scaled["issue_efficiency"] < 0.01 < scaled["compute_fraction"] < 1 / 3


def test_the_report_distance_divides_each_dimension_by_its_scale() -> None:
    q = {"compute_fraction": 0.2, "memory_fraction": 0.5, "l1_miss_rate": None}
    s = {"compute_fraction": 0.1, "memory_fraction": 0.3, "l1_miss_rate": 0.4}
    names = ["compute_fraction", "memory_fraction", "l1_miss_rate"]
    scales = {"compute_fraction": 0.05, "memory_fraction": 0.4, "l1_miss_rate": 1.0}
    raw = (0.1**2 + 0.2**2) * SIGNATURE_DIM / 2
    assert _distance(q, s, names) == pytest.approx(raw)
    assert _distance(q, s, names, scales) == pytest.approx((2.0**2 + 0.5**2) * SIGNATURE_DIM / 2)


def test_the_similarity_table_groups_states_by_relation_and_scores_them_as_the_service() -> None:
    """Three layernorm states (two configs at one instance, one at another) and one rmsnorm state; one
    of them one spread away from the others on every kept dimension: 0.5 in the CPU sources' unit."""
    reading = {THREAD_SHARE: "parallel_efficiency"}
    near = {name: 0.5 for name in CANDIDATES}
    away = {n: 0.5 + CPU_DIMENSION_SCALES.get(reading.get(n, n), 0.0) for n in CANDIDATES}
    layernorm, rmsnorm = get_task("layernorm").baseline_config, get_task("rmsnorm").baseline_config
    states = [("16x512", layernorm, near), ("16x512", {**layernorm, "unroll": 4}, away),
              ("256x1024", layernorm, near), ("16x512", rmsnorm, near)]  # fmt: skip
    report = {
        "development_tasks": ["layernorm", "rmsnorm"],
        "pairs": [{"instance": i, "config": config_key(c), "first": v, "second": v} for i, c, v in states],
    }
    spread = similarity_by_relation(report, CPU_SIMILARITY_UNIT)
    assert {r: f["pairs"] for r, f in spread.items()} == {
        "re-measurement": 4, "same instance": 2, "other instance": 4, "other task": 6,
    }  # fmt: skip
    assert spread["re-measurement"]["median"] == 1.0
    assert spread["same instance"]["median"] == pytest.approx(0.5)
    assert spread["other instance"]["median"] == pytest.approx(0.75)  # 1, 1, 0.5, 0.5
    before = similarity_by_relation(report, UNJUDGED_SIMILARITY_UNIT)
    assert before["same instance"]["median"] == pytest.approx(1 / (1 + SIGNATURE_DIM))


def test_the_frozen_scales_and_dimension_set_are_the_reports() -> None:
    """core/signature.py's CPU dimensions and scales are what the rules gave on the report they name."""
    report = json.loads((Path(__file__).resolve().parents[2] / "results" / SCALES_REPORT).read_text())
    reading = {THREAD_SHARE: "parallel_efficiency"}  # the thread share is what signature 3 on reads there
    assert [reading.get(n, n) for n in report["kept"]] == list(CPU_DIMENSIONS_KEPT)
    frozen = {reading.get(n, n): s for n, s in report["scales"].items()}
    assert frozen == pytest.approx(CPU_DIMENSION_SCALES, rel=5e-4)
    assert set(report["development_tasks"]) == {"layernorm", "rmsnorm"}
