"""Issue 28: the service stores only consistent evidence, says who vouches for it, and bounds what one
writer key can do to another's retrieval. Over real HTTP on the real Neo4j, as a careless or hostile
agent would try it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
import pytest

from kernelgraph.bench.poisoning import HONEST_EFFECTS, run_poisoning
from kernelgraph.core.models import Role
from kernelgraph.service.auth import create_key, list_keys
from kernelgraph.service.knowledge import KnowledgeService
from kernelgraph.service.recorder import Recorder
from kernelgraph.service.retrieval import INFLUENCE_BOUND
from kernelgraph.service.store import GraphStore
from tests import factories
from tests.service.conftest import Keys, bearer
from tests.service.test_api import assert_error, counts, setup_target

pytestmark = pytest.mark.neo4j


def _attempt(**overrides: Any) -> dict[str, Any]:
    return factories.attempt(**overrides)


def _with_child(record: dict[str, Any], **child: Any) -> dict[str, Any]:
    return {**record, "child_measurement": {**record["child_measurement"], **child}}


def _post(http: httpx.Client, key: str, body: Any) -> httpx.Response:
    return http.post("/v1/attempts", content=json.dumps(body), headers={**bearer(key),
                     "Content-Type": "application/json"})  # fmt: skip


INCONSISTENT = {
    # The cases: each a 422 naming the field, nothing stored.
    "speedup beyond its medians": (_attempt(speedup=1.5) | {"speedup": 1e300}, "speedup"),
    "speedup 100 with a 1.5x pair": (_attempt(speedup=1.5) | {"speedup": 100.0}, "speedup"),
    "crashed with a speedup": (_attempt(speedup=1.5, outcome="crashed"), "speedup"),
    "kept but incorrect": (_with_child(_attempt(speedup=1.5), correct=False), "child_measurement.correct"),
    "kept but slower": (_attempt(speedup=0.8, outcome="kept"), "speedup"),
    "speedup without the same run's parent": (
        _with_child(_attempt(speedup=1.5), parent_median_ns=None), "child_measurement.parent_median_ns"),
    "correct as a string": (_with_child(_attempt(), correct="yes"), "child_measurement.correct"),
    "trials as a string": (_with_child(_attempt(), trials="21"), "child_measurement.trials"),
    "median as a string": (_with_child(_attempt(), median_ns="1e6"), "child_measurement.median_ns"),
    "a counter set to true": (_with_child(_attempt(), counters={"flops": True}), "child_measurement.counters.flops"),
    "dram throughput of 5000%": (
        _with_child(_attempt(), counters={"dram_throughput_pct": 5000.0}),
        "child_measurement.counters.dram_throughput_pct"),
    "l2 hit rate of -50%": (
        _with_child(_attempt(), counters={"l2_hit_rate_pct": -50.0}), "child_measurement.counters.l2_hit_rate_pct"),
}  # fmt: skip


@pytest.mark.parametrize("case", list(INCONSISTENT))
def test_inconsistent_or_coerced_attempts_are_422_naming_the_field_and_store_nothing(
    case: str, http: httpx.Client, keys: Keys, store: GraphStore
) -> None:
    body, field = INCONSISTENT[case]
    setup_target(http, keys.writer)
    before = counts(store, keys.namespace)
    assert_error(_post(http, keys.writer, body), 422, field)
    assert counts(store, keys.namespace) == before


def test_nan_in_params_and_duplicate_targets_are_422(
    http: httpx.Client, keys: Keys, store: GraphStore
) -> None:
    setup_target(http, keys.writer)
    before = counts(store, keys.namespace)
    raw = json.dumps(_attempt(transform="tile")).replace('"factor": 4', '"tile": NaN')
    response = http.post("/v1/attempts", content=raw, headers={**bearer(keys.writer),
                         "Content-Type": "application/json"})  # fmt: skip
    assert response.status_code == 422 and "NaN" not in json.dumps(counts(store, keys.namespace))
    assert counts(store, keys.namespace) == before
    twice = {"targets": [factories.target("twin"), factories.target("twin", peak_gflops=999.0)]}
    assert_error(http.post("/v1/targets", json=twice, headers=bearer(keys.writer)), 422, "targets[1].name")
    assert http.get("/v1/targets", headers=bearer(keys.reader)).json()["targets"][0]["name"] == "cpu-test"


def test_a_reused_attempt_key_with_other_content_is_409_and_the_same_content_a_replay(
    http: httpx.Client, keys: Keys, store: GraphStore
) -> None:
    setup_target(http, keys.writer)
    first = _attempt(key="idem:0", speedup=1.5)
    assert _post(http, keys.writer, first).status_code == 201
    replay = _post(http, keys.writer, first)
    assert replay.status_code == 200 and replay.json()["created"] is False
    before = counts(store, keys.namespace)
    other = _attempt(key="idem:0", speedup=2.0, child_source="void kernel(void) { /* other */ }")
    error = assert_error(_post(http, keys.writer, other), 409, "attempt_key")
    assert "idem:0" in error["message"]
    batch = http.post("/v1/attempts/batch", json={"attempts": [_attempt(key="idem:1"), other]},
                      headers=bearer(keys.writer))  # fmt: skip
    assert_error(batch, 409, "attempts[1].attempt_key")
    assert counts(store, keys.namespace) == before  # nothing of the batch either
    # The id the replay answers is one that is stored: the next attempt can chain from it.
    chained = {**_attempt(key="idem:2"), "parent": None, "parent_measurement": None,
               "parent_measurement_id": replay.json()["child_measurement_id"]}  # fmt: skip
    assert _post(http, keys.writer, chained).status_code == 201


def test_times_beyond_the_peaks_are_stored_flagged_and_never_evidence(
    http: httpx.Client, keys: Keys, store: GraphStore, repo_root: Path
) -> None:
    setup_target(http, keys.writer)
    assert (
        _post(http, keys.writer, _attempt(key="honest:0", transform="unroll", speedup=1.5)).status_code == 201
    )
    # 1 ns for 2 MFLOP on a 200 GFLOP/s target: self-consistent, impossible.
    cheat = _with_child(_attempt(key="cheat:0", transform="magic", speedup=1e6), median_ns=1.0,
                        counters={"time_ns": 1.0, "flops": 2e6, "bytes": 1e6})  # fmt: skip
    assert _post(http, keys.writer, cheat).status_code == 201
    stored = store.driver.execute_query(
        "MATCH (a:Attempt {namespace: $ns, attempt_key: 'cheat:0'}) RETURN a.implausible AS flag, "
        "a.plausibility_floor_ns AS floor, a.checked_peak_gflops AS peak", ns=keys.namespace,
        database_=store.database).records[0]  # fmt: skip
    assert stored["flag"] is True and stored["floor"] == pytest.approx(2e6 / (1.1 * 200.0))
    assert stored["peak"] == 200.0
    answer = http.post("/v1/retrieve", json={"target": "cpu-test", "signature": factories.masked(0.5)},
                       headers=bearer(keys.reader)).json()  # fmt: skip
    assert [t["transform"] for t in answer["transforms"]] == ["unroll"]
    board = http.get("/v1/leaderboard", headers=bearer(keys.reader)).json()["rows"]
    assert {row["transform"] for row in board} == {"unroll"}  # no geomean of 1e6 either
    suspicious = store.driver.execute_query(
        (repo_root / "cypher" / "suspicious_evidence.cypher").read_text(),
        namespace=keys.namespace, outlier_speedup=10.0, limit=10, database_=store.database).records  # fmt: skip
    assert [r["attempt_key"] for r in suspicious] == ["cheat:0"]
    assert suspicious[0]["reason"].startswith("implausible")


def test_only_a_verifier_key_records_verified_evidence_and_retrieval_says_so(
    http: httpx.Client, keys: Keys, store: GraphStore
) -> None:
    verifier = create_key(store, Role.VERIFIER, keys.namespace, "re-measuring evaluator").key
    setup_target(http, keys.writer)
    claimed = _attempt(key="w:0", transform="unroll", speedup=1.5)
    claimed["child_measurement"].update(evaluator_version=2, sandboxed=True)  # claims, nothing more
    assert _post(http, keys.writer, claimed).status_code == 201
    assert (
        _post(
            http,
            verifier,
            _attempt(
                key="v:0", transform="tile", speedup=1.2, child_source="void kernel(void) { /* tiled */ }"
            ),
        ).status_code
        == 201
    )
    query = {"target": "cpu-test", "signature": factories.masked(0.5)}
    every = http.post("/v1/retrieve", json=query, headers=bearer(keys.reader)).json()
    assert (every["evidence_attempts"], every["verified_attempts"], every["evidence_keys"]) == (2, 1, 2)
    assert {t["transform"]: t["verified_attempts"] for t in every["transforms"]} == {"unroll": 0, "tile": 1}
    verified = http.post(
        "/v1/retrieve", json={**query, "verified_only": True}, headers=bearer(keys.reader)
    ).json()
    assert [t["transform"] for t in verified["transforms"]] == ["tile"] and verified["verified_only"]
    flags = dict(store.driver.execute_query(
        "MATCH (a:Attempt {namespace: $ns}) RETURN a.attempt_key AS k, a.verified AS v", ns=keys.namespace,
        database_=store.database).records)  # fmt: skip
    assert flags == {"w:0": False, "v:0": True}


def test_changing_a_stored_targets_peaks_is_admin_only(http: httpx.Client, keys: Keys) -> None:
    setup_target(http, keys.writer)
    same = http.post("/v1/targets", json={"targets": [factories.target()]}, headers=bearer(keys.writer))
    assert same.status_code == 200  # re-registering unchanged peaks is fine
    faster = {"targets": [factories.target(peak_gflops=1e9)]}
    assert_error(
        http.post("/v1/targets", json=faster, headers=bearer(keys.writer)), 403, "targets[0].peak_gflops"
    )
    assert http.get("/v1/targets", headers=bearer(keys.reader)).json()["targets"][0]["peak_gflops"] == 200.0
    assert http.post("/v1/targets", json=faster, headers=bearer(keys.admin)).status_code == 200
    assert http.get("/v1/targets", headers=bearer(keys.reader)).json()["targets"][0]["peak_gflops"] == 1e9


def test_quarantine_is_admin_only_a_dry_run_first_and_reversible(
    http: httpx.Client, keys: Keys, store: GraphStore
) -> None:
    poisoner = create_key(store, Role.WRITER, keys.namespace, "poisoner")
    setup_target(http, keys.writer)
    assert _post(http, keys.writer, _attempt(key="h:0", transform="unroll", speedup=1.5)).status_code == 201
    assert (
        _post(
            http,
            poisoner.key,
            _attempt(key="p:0", transform="magic", speedup=3.0, child_source="void kernel(void) { /* p */ }"),
        ).status_code
        == 201
    )
    query = {"target": "cpu-test", "signature": factories.masked(0.5)}

    def transforms() -> set[str]:
        answer = http.post("/v1/retrieve", json=query, headers=bearer(keys.reader)).json()
        return {t["transform"] for t in answer["transforms"]}

    assert transforms() == {"unroll", "magic"}
    body = {"key_id": poisoner.key_id}
    assert_error(http.post("/v1/quarantine", json=body, headers=bearer(keys.writer)), 403, "authorization")
    dry = http.post("/v1/quarantine", json=body, headers=bearer(keys.admin)).json()
    assert (dry["dry_run"], dry["aggregates"], dry["attempts"], dry["transforms"]) == (True, 1, 1, ["magic"])
    assert transforms() == {"unroll", "magic"}  # a dry run changes nothing
    done = http.post("/v1/quarantine", json={**body, "dry_run": False}, headers=bearer(keys.admin)).json()
    assert (done["dry_run"], done["aggregates"]) == (False, 1)
    assert transforms() == {"unroll"}
    again = http.post(
        "/v1/quarantine", json={**body, "dry_run": False, "release": True}, headers=bearer(keys.admin)
    )
    assert again.json()["aggregates"] == 1 and transforms() == {"unroll", "magic"}


def test_a_revoked_key_stops_working_at_once(http: httpx.Client, keys: Keys, store: GraphStore) -> None:
    doomed = create_key(store, Role.WRITER, keys.namespace, "doomed")
    assert http.get("/v1/targets", headers=bearer(doomed.key)).status_code == 200  # now cached
    assert_error(
        http.post(f"/v1/keys/{doomed.key_id}/revoke", headers=bearer(keys.writer)), 403, "authorization"
    )
    revoked = http.post(f"/v1/keys/{doomed.key_id}/revoke", headers=bearer(keys.admin))
    assert revoked.status_code == 200 and revoked.json()["revoked_at"]
    assert_error(http.get("/v1/targets", headers=bearer(doomed.key)), 401, "authorization")


def test_poisoned_attempts_never_change_the_honest_keys_top_three(store: GraphStore, namespace: str) -> None:
    """1, 10 and 100 self-consistent, plausible lies per honest attempt from another key (and times
    beyond the peaks, flagged): the honest key's top three stay, in order; the lies are bounded."""
    report = run_poisoning(KnowledgeService(store), namespace, states=2, repeats=2)
    ranked = sorted(HONEST_EFFECTS, key=lambda t: -HONEST_EFFECTS[t])
    assert report.baseline_top3 == ranked[:3]
    assert [r.ratio for r in report.rounds] == [1, 10, 100]
    assert report.rounds[-1].poisoned == 100 * report.honest_attempts and report.rounds[-1].flagged > 0
    for round_ in report.rounds:
        assert round_.top3 == report.baseline_top3, round_
        assert round_.magic_score is not None and 0 < round_.magic_score < INFLUENCE_BOUND
        for transform, score in report.baseline_scores.items():
            assert abs(round_.scores[transform] - score) < INFLUENCE_BOUND


@pytest.mark.usefixtures("cli_on_test_neo4j")
def test_the_cli_quarantines_after_a_dry_run_and_revokes(store: GraphStore, namespace: str) -> None:
    from typer.testing import CliRunner

    from kernelgraph.cli import app

    knowledge = KnowledgeService(store)
    knowledge.upsert_targets(namespace, [factories.target()])
    writer = create_key(store, Role.WRITER, namespace, "cli poisoner")
    knowledge.record_attempts(namespace, [_attempt(key="cli:0")], Recorder(writer.key_id))
    runner = CliRunner()
    dry = runner.invoke(app, ["keys", "quarantine", writer.key_id, "--namespace", namespace])
    said = " ".join(dry.output.split())  # rich wraps lines
    assert dry.exit_code == 0 and "would quarantine" in said and "1 attempts" in said, dry.output
    flagged = "MATCH (a:Attempt {namespace: $ns}) RETURN a.quarantined AS q"
    assert store.driver.execute_query(flagged, ns=namespace, database_=store.database).records[0]["q"] is None
    applied = runner.invoke(app, ["keys", "quarantine", writer.key_id, "--namespace", namespace, "--apply"])
    assert applied.exit_code == 0 and "quarantined" in applied.output
    assert store.driver.execute_query(flagged, ns=namespace, database_=store.database).records[0]["q"] is True
    revoked = runner.invoke(app, ["keys", "revoke", writer.key_id])
    assert revoked.exit_code == 0 and writer.key_id in " ".join(revoked.output.split())
    assert runner.invoke(app, ["keys", "list"]).exit_code == 0
    [listed] = [row for row in list_keys(store) if row["key_id"] == writer.key_id]
    assert listed["revoked_at"]
    assert runner.invoke(app, ["keys", "revoke", "000000000000"]).exit_code == 2
