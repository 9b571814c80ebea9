"""Counter-keyed retrieval, the text baseline and cross-target transfer on constructed graphs."""

from __future__ import annotations

import math
import time

import pytest

from kernelgraph.core.errors import NotFound
from kernelgraph.core.signature import (
    SIGNATURE_DIM,
    SIGNATURE_VERSION,
    compute_signature,
    masked_similarity,
    signature_from_values,
)
from kernelgraph.service.embeddings import MiniLMEmbedder
from kernelgraph.service.knowledge import KnowledgeService
from kernelgraph.service.stats import spearman
from kernelgraph.service.store import GraphStore
from kernelgraph.service.targets import peaks_of
from tests import factories

pytestmark = pytest.mark.neo4j

# Signature version 2, as cpu_cachegrind measures it (null: spill and register pressure, not measured).
MEMORY_BOUND = [0.05, 0.9, 0.1, 0.3, 0.6, 0.5, 0.1, None, None, 0.0, 0.9]
COMPUTE_BOUND = [0.9, 0.1, 0.9, 0.01, 0.01, 1.0, 0.8, None, None, 0.0, 0.9]
QUERY_SOURCE = (
    "void kernel(const float* x, float* y, int n) { for (int i = 0; i < n; i++) y[i] = expf(x[i]); }"
)


@pytest.fixture(scope="module")
def embedder() -> MiniLMEmbedder:
    return MiniLMEmbedder()


def _attempts_from(
    prefix: str, parent_source: str, signature: list[float], wins: str, loses: str
) -> list[dict]:
    records = []
    for index, (transform, speedup) in enumerate(((wins, 2.0), (loses, 0.8), (wins, 1.8))):
        records.append(
            factories.attempt(
                f"{prefix}:{index}",
                transform=transform,
                speedup=speedup,
                outcome="kept" if speedup > 1 else "discarded",
                parent_source=parent_source,
                child_source=f"{parent_source} /* {transform} {index} */",
                parent_signature=signature,
            )
        )
    return records


def test_counters_and_text_modes_find_different_evidence(
    store: GraphStore, namespace: str, embedder: MiniLMEmbedder
) -> None:
    knowledge = KnowledgeService(store, embedder)
    knowledge.upsert_targets(namespace, [factories.target()])
    # Counter-similar states (memory bound like the query) have unrelated source: X wins there.
    counter_similar = [
        _attempts_from(f"mem{i}", f"/* blocked matmul {i} */ for (kk...) for (jj...) c[i*n+j] += a[i*n+k]*b[k*n+j];",
                       MEMORY_BOUND, wins="vectorize", loses="unroll")
        for i in range(3)
    ]  # fmt: skip
    # Source-similar kernels (elementwise expf like the query) were compute bound: Y wins there.
    text_similar = [
        _attempts_from(f"txt{i}", QUERY_SOURCE.replace("expf", f"expf /* {i} */"), COMPUTE_BOUND,
                       wins="unroll", loses="vectorize")
        for i in range(3)
    ]  # fmt: skip
    for group in counter_similar + text_similar:
        knowledge.record_attempts(namespace, group)
    query_signature = [None if v is None else min(1.0, v + 0.02) for v in MEMORY_BOUND]

    by_counters = knowledge.retrieve(
        [namespace], {"target": "cpu-test", "mode": "counters", "signature": query_signature, "k": 3}
    )
    by_text = knowledge.retrieve(
        [namespace], {"target": "cpu-test", "mode": "text", "source": QUERY_SOURCE, "k": 3}
    )

    assert by_counters.transforms[0].transform == "vectorize"
    assert by_text.transforms[0].transform == "unroll"
    expected_evidence = {
        r.parent_measurement_id
        for group in counter_similar
        for r in knowledge.record_attempts(namespace, group)  # replays: returns the stored ids
    }
    assert set(by_counters.transforms[0].evidence_measurement_ids) == expected_evidence
    assert set(by_counters.transforms[0].evidence_attempt_keys) == {
        f"mem{i}:{j}" for i in range(3) for j in (0, 2)
    }
    top = by_counters.transforms[0]
    assert top.successes == top.attempts == 6 and top.same_target_attempts == 6
    assert math.isclose(top.weighted_log_speedup, (math.log(2.0) + math.log(1.8)) / 2, rel_tol=0.05)
    assert top.best_speedup == pytest.approx(2.0)
    # What a proposer weighs the evidence by comes with the response, not from the service's constants.
    assert by_counters.neighbour_ids and set(by_counters.neighbour_ids) == expected_evidence
    assert by_counters.signature == query_signature
    assert by_counters.prior_weight > 0 and by_counters.failure_log_speedup < 0
    for found in by_counters.transforms:
        assert 0 < found.evidence_weight <= found.attempts  # similarity x target weight <= 1 per attempt
        assert found.confidence == pytest.approx(
            found.evidence_weight / (found.evidence_weight + by_counters.prior_weight)
        )


def test_retrieval_by_raw_counters_and_held_out_task(store: GraphStore, namespace: str) -> None:
    knowledge = KnowledgeService(store)
    knowledge.upsert_targets(namespace, [factories.target()])
    knowledge.record_attempts(
        namespace, _attempts_from("a", "void kernel(void) {}", MEMORY_BOUND, "tile", "fuse")
    )
    counters = {"time_ns": 1e6, "flops": 1e6, "bytes": 1.8e7, "instructions": 1e7, "d1_miss_rate": 0.3,
                "ll_miss_rate": 0.6, "ll_miss_bytes": 1.6e7, "cpu_utilization": 0.5, "threads": 1}  # fmt: skip
    response = knowledge.retrieve(
        [namespace], {"target": "cpu-test", "counters": counters, "counter_source": "cpu_cachegrind"}
    )
    assert response.signature is not None and len(response.signature) == SIGNATURE_DIM
    assert response.transforms[0].transform == "tile"
    # Without threads the query did not measure parallel_efficiency, which the stored states did: it
    # cannot place them, so they are no neighbours (never a neutral 0.5 in its place).
    partial = {k: v for k, v in counters.items() if k != "threads"}
    blind = knowledge.retrieve(
        [namespace], {"target": "cpu-test", "counters": partial, "counter_source": "cpu_cachegrind"}
    )
    assert blind.signature is not None and blind.signature[5] is None
    assert blind.neighbours == 0 and blind.transforms == []
    with pytest.raises(NotFound) as unknown:
        knowledge.retrieve([namespace], {"target": "no-such-target", "signature": MEMORY_BOUND})
    assert unknown.value.field == "target"
    held_out = knowledge.retrieve(
        [namespace], {"target": "cpu-test", "signature": MEMORY_BOUND, "exclude_task": "matmul"}
    )
    assert held_out.transforms == []


def test_transfer_returns_the_constructed_rank_correlations(store: GraphStore, namespace: str) -> None:
    knowledge = KnowledgeService(store)
    knowledge.upsert_targets(namespace, [factories.target("gpu-a"), factories.target("gpu-b")])
    agrees_a, agrees_b = [1.1, 1.5, 2.0, 2.5, 3.0], [1.2, 1.4, 1.9, 2.6, 3.5]
    reverses_a, reverses_b = [0.5, 0.9, 1.3, 1.7, 2.1], [2.1, 1.7, 1.3, 0.9, 0.5]
    records = []
    for i in range(5):
        parent = f"void kernel_{i}(void) {{}}"
        for transform, on_a, on_b in (
            ("fuse", agrees_a[i], agrees_b[i]),
            ("split_k", reverses_a[i], reverses_b[i]),
        ):
            for target, speedup in (("gpu-a", on_a), ("gpu-b", on_b)):
                records.append(factories.attempt(
                    f"{target}-{transform}:{i}", transform=transform, speedup=speedup, target_name=target,
                    outcome="kept" if speedup > 1 else "discarded",
                    parent_source=parent, child_source=f"{parent} /* {transform} */",
                ))  # fmt: skip
    knowledge.record_attempts(namespace, records)
    result = knowledge.transfer([namespace], "gpu-a", "gpu-b")
    rows = {row.transform: row for row in result.transforms}
    assert rows["fuse"].pairs == 5 and rows["fuse"].rank_correlation == pytest.approx(1.0)
    assert rows["split_k"].rank_correlation == pytest.approx(-1.0)
    assert rows["fuse"].agreement_rate == pytest.approx(1.0)
    # gains (log speedups) agree in sign only where both sides are above 1x or both below: 1 of 5 pairs
    assert rows["split_k"].agreement_rate == pytest.approx(0.2)
    assert result.pattern is None


def test_spearman_handles_ties_and_degenerate_input() -> None:
    assert spearman([1, 2, 3], [10, 20, 30]) == pytest.approx(1.0)
    assert spearman([1, 2, 2, 3], [1, 2, 2, 3]) == pytest.approx(1.0)
    assert spearman([1, 1, 1], [1, 2, 3]) is None
    assert spearman([1, 2], [2, 1]) is None


def test_each_parameter_setting_keeps_its_own_evidence(store: GraphStore, namespace: str) -> None:
    knowledge = KnowledgeService(store)
    knowledge.upsert_targets(namespace, [factories.target()])
    records = []
    for index, (schedule, speedup) in enumerate((("static", 2.0), ("dynamic,1", 0.25), ("static", 1.8))):
        record = factories.attempt(f"p:{index}", transform="schedule", speedup=speedup,
                                   outcome="kept" if speedup > 1 else "discarded",
                                   child_source=f"/* {schedule} {index} */", parent_signature=MEMORY_BOUND)  # fmt: skip
        record["transform"]["params"] = {"schedule": schedule}
        records.append(record)
    knowledge.record_attempts(namespace, records)
    row = knowledge.retrieve([namespace], {"target": "cpu-test", "signature": MEMORY_BOUND}).transforms[0]
    assert [p.params for p in row.by_params] == [{"schedule": "static"}, {"schedule": "dynamic,1"}]
    static, dynamic = row.by_params
    assert (static.attempts, static.successes, dynamic.attempts, dynamic.successes) == (2, 2, 1, 0)
    assert static.weighted_log_speedup == pytest.approx((math.log(2.0) + math.log(1.8)) / 2)
    assert dynamic.weighted_log_speedup == pytest.approx(math.log(0.25))
    assert row.best_example is not None and row.best_example["params"] == {"schedule": "static"}
    assert row.best_speedup == pytest.approx(2.0)


def _timing_only(values: list[float | None]) -> list[float | None]:
    return factories.masked([0.0 if v is None else v for v in values], "cpu_timing")


def test_masked_distance_over_the_dimensions_both_measured(store: GraphStore, namespace: str) -> None:
    """A cachegrind query reaches a timing-only state on the timing dimensions, scored as the Python
    reference scores it; the stored states' unmeasured dimensions never enter the distance."""
    knowledge = KnowledgeService(store)
    knowledge.upsert_targets(namespace, [factories.target()])
    timing = factories.attempt("t:0", transform="fuse", parent_source="/* timing */",
                               parent_signature=[0.0] * SIGNATURE_DIM)  # fmt: skip
    timing["parent_measurement"].update(counter_source="cpu_timing", signature=_timing_only(MEMORY_BOUND))
    cache = factories.attempt("c:0", transform="tile", parent_source="/* cache */",
                              parent_signature=COMPUTE_BOUND)  # fmt: skip
    knowledge.record_attempts(namespace, [timing, cache])
    query = [None if v is None else min(1.0, v + 0.05) for v in MEMORY_BOUND]
    found = knowledge.retrieve([namespace], {"target": "cpu-test", "signature": query, "k": 5})
    assert found.neighbours == 2 and found.transforms[0].transform == "fuse"
    # The stored state is a cpu_timing one: its dimensions are scaled by that source's scales.
    expected = masked_similarity(
        signature_from_values(query), signature_from_values(_timing_only(MEMORY_BOUND), "cpu_timing")
    )
    fuse = found.transforms[0]
    assert expected is not None and fuse.mean_similarity == pytest.approx(expected, rel=1e-6)
    # A timing-only query cannot place the cachegrind state (it did not measure the cache dimensions).
    timing_query = _timing_only(MEMORY_BOUND)
    only = knowledge.retrieve([namespace], {"target": "cpu-test", "signature": timing_query, "k": 5})
    assert only.neighbours == 1 and [t.transform for t in only.transforms] == ["fuse"]


def test_index_search_ranks_as_exact_search(
    store: GraphStore, namespace: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The per-source vector indexes (plus exact scoring of incomplete states) return the same
    neighbours with the same renormalised scores as exact scoring of every state."""
    import random

    knowledge = KnowledgeService(store)
    knowledge.upsert_targets(namespace, [factories.target()])
    rng = random.Random(3)
    records = []
    for i in range(24):
        values = [round(rng.random(), 4) for _ in range(SIGNATURE_DIM)]
        record = factories.attempt(f"i:{i}", transform=f"t{i % 4}", parent_source=f"/* {i} */",
                                   parent_signature=values)  # fmt: skip
        if i % 3 == 1:  # a timing-only state: complete for its own source
            record["parent_measurement"].update(counter_source="cpu_timing", signature=_timing_only(values))
        if i % 3 == 2:  # incomplete for its source: no parallel_efficiency, so in no index
            incomplete = factories.masked(values)
            incomplete[5] = None
            record["parent_measurement"]["signature"] = incomplete
        records.append(record)
    knowledge.record_attempts(namespace, records)
    query = factories.masked([round(rng.random(), 4) for _ in range(SIGNATURE_DIM)])
    request = {"target": "cpu-test", "signature": query, "k": 10}
    exact = knowledge.retrieve([namespace], request)
    large = KnowledgeService(store)
    monkeypatch.setattr("kernelgraph.service.retrieval.EXACT_SEARCH_MAX_STATES", 0)
    # Vector indexes take new nodes in shortly after their commit: wait until they hold every state.
    deadline = time.monotonic() + 30
    while True:
        indexed = large.retrieve([namespace], request)
        if indexed.neighbour_ids == exact.neighbour_ids or time.monotonic() > deadline:
            break
        time.sleep(0.5)
    assert exact.neighbour_ids and indexed.neighbour_ids == exact.neighbour_ids
    assert [t.mean_similarity for t in indexed.transforms] == pytest.approx(
        [t.mean_similarity for t in exact.transforms]
    )


def test_a_retrieval_reads_in_one_transaction(
    store: GraphStore, namespace: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every query of a retrieval (the searches and the aggregation) runs in one read transaction: one
    BEGIN and COMMIT instead of one pair per query; none runs outside it."""
    knowledge = KnowledgeService(store)
    knowledge.upsert_targets(namespace, [factories.target()])
    knowledge.record_attempts(namespace, [
        factories.attempt(f"tx:{i}", transform="unroll", parent_source=f"/* tx {i} */",
                          parent_signature=factories.masked(MEMORY_BOUND))
        for i in range(3)
    ])  # fmt: skip
    monkeypatch.setattr("kernelgraph.service.retrieval.EXACT_SEARCH_MAX_STATES", 0)  # the indexed path
    knowledge.targets([namespace], ["cpu-test"])  # target rows are cached: not part of a retrieval
    transactions: list[list[str]] = []
    run_in = store.run_in

    def read_transaction(work):  # type: ignore[no-untyped-def]
        transactions.append([])
        return GraphStore.read_transaction(store, work)

    def counted_run_in(tx, name, /, **params):  # type: ignore[no-untyped-def]
        transactions[-1].append(name)
        return run_in(tx, name, **params)

    def outside(name, /, **params):  # type: ignore[no-untyped-def]
        raise AssertionError(f"{name} ran outside the retrieval's transaction")

    monkeypatch.setattr(store, "read_transaction", read_transaction)
    monkeypatch.setattr(store, "run_in", counted_run_in)
    monkeypatch.setattr(store, "read", outside)
    answer = knowledge.retrieve(
        [namespace], {"target": "cpu-test", "signature": factories.masked(MEMORY_BOUND)}
    )
    assert answer.transforms and answer.transforms[0].transform == "unroll"
    assert len(transactions) == 1
    assert {
        "nearest_states_by_signature_exact",
        "nearest_states_by_signature",
        "aggregate_transforms",
    } <= set(transactions[0])


def test_the_stored_signature_keeps_its_mask_and_source_vector(store: GraphStore, namespace: str) -> None:
    knowledge = KnowledgeService(store)
    knowledge.upsert_targets(namespace, [factories.target()])
    record = factories.attempt("s:0", parent_signature=MEMORY_BOUND)
    record["parent_measurement"]["signature"] = None  # computed by the service from the raw counters
    record["parent_measurement"]["counters"] = {
        "time_ns": 1e6, "flops": 2e6, "bytes": 1e6, "instructions": 4e6, "d1_miss_rate": 0.1,
        "ll_miss_rate": 0.2, "ll_miss_bytes": 64e3, "cpu_utilization": 0.5, "threads": 1,
    }  # fmt: skip
    knowledge.record_attempts(namespace, [record])
    row = store.driver.execute_query(
        "MATCH (m:Measurement {namespace: $ns}) WHERE m.explored RETURN properties(m) AS m",
        ns=namespace, database_=store.database,
    ).records[0]["m"]  # fmt: skip
    expected = compute_signature("cpu_cachegrind", record["parent_measurement"]["counters"],
                                 peaks_of(factories.target()))  # fmt: skip
    assert expected.complete and row["signature_complete"] is True
    assert row["signature_version"] == SIGNATURE_VERSION and row["signature_dims"] == list(expected.measured)
    assert row["signature_missing"] == ["spill_pressure", "register_pressure", "speed_of_light"]
    assert row["signature_cpu_cachegrind"] == pytest.approx(list(expected.source_vector or ()))
    # The child no attempt started from keeps its signature but stays out of the vector index.
    child = store.driver.execute_query(
        "MATCH (m:Measurement {namespace: $ns}) WHERE m.explored IS NULL RETURN properties(m) AS m",
        ns=namespace, database_=store.database,
    ).records[0]["m"]  # fmt: skip
    assert child["signature_dims"] and child["signature_complete"] is True
    assert "signature_cpu_cachegrind" not in child
