"""The drop rule of `kernelgraph bench signature` (kernelgraph/bench/signature.py), as
docs/counter-signature.md wrote it, on states whose two measurements are made up to test each clause."""

from __future__ import annotations

import random

from kernelgraph.bench.signature import CANDIDATES, Pair, apply_rule, correlations, dimension_stats


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
