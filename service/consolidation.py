"""Consolidation: keep the experience graph useful as it grows (`kernelgraph consolidate`, or on a schedule).

It builds on the per-state aggregates (StateEvidence, schema 0006: one per measured state, transform
and setting, maintained on write with count, sum and sum of squares of the log speedup), so repeated
evidence for one (state, transform, setting) is already one aggregate; consolidation adds what the
write path cannot know:

1. **Merge re-measured states.** Every run of the loop re-measures its baseline, so one kernel on one
   target becomes many explored states with near-identical signatures, which crowd each other in
   neighbour search. States of the same kernel, target, counter source, evaluator and signature
   version whose signatures agree within noise are merged into one (the group's existing state, else
   the smallest id): the duplicates gain (dup)-[:MERGED_INTO]->(state), leave neighbour search, and
   the state takes one neighbour slot per measurement it stands for. Nothing is deleted. In the same
   transaction the state is rolled up (schema 0010): one (:EvidenceRollup) per transform and setting
   sums its own and its duplicates' aggregates, and retrieval reads only those, so a merged state costs
   one aggregate per (state, transform, setting) like any other. Attempts recorded later from any of
   its members are added to the rollup by the writer (cypher/record_attempts.cypher), in the writer's
   transaction and under the locks the roll-up takes, so the rollup equals its parts at every commit.
2. **Weigh versions.** States measured by a superseded evaluator or with a stale signature version
   get a `version_weight` below 1 (service/consolidation_rules.py); retrieval multiplies it in.
3. **Park unexplored measurements.** Measurements no attempt started from (children) are not
   candidates for neighbour search; their signature moves to `parked_signature` until an attempt
   starts from one, which restores it. Since schemas 0012 and 0013 children are in no index neighbour
   search reads, so this only cleans up graphs written before them (docs/retrieval.md).
4. **Flag contradictions.** Groups of (state, transform, setting) whose attempts disagree beyond
   measurement noise become (:Contradiction) nodes for re-measurement, their aggregates `disputed`;
   retrieval reports them and Browser shows them (cypher/contradictions.cypher).
5. **Measure target similarity.** The transfer matrix's rank correlation between every pair of the
   namespace's targets is stored on (:HardwareTarget)-[:TRANSFERS_LIKE]->(:HardwareTarget) (schema
   0017); retrieval weighs another target's evidence by it (service/target_similarity.py).

Every write is guarded and idempotent: a second run over unchanged evidence writes nothing, and runs
beside concurrent writers (and other consolidations) never lose or double evidence: writers only add
attempts and aggregates (and add each attempt to the rollup of a rolled-up state), consolidation only
adds relationships, flags and weights, and recomputes rollups from their parts under the parts' locks.
"""

from __future__ import annotations

import hashlib
import logging
import threading
import time
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel

from kernelgraph.core.signature import SIGNATURE_VERSION
from kernelgraph.service import target_similarity
from kernelgraph.service.consolidation_rules import (
    ADMITTED_OBJECT_EVALUATOR,
    EXTERNAL_COUNTER_SOURCES,
    NOISE_FLOOR,
    NOISE_Z,
    AttemptEvidence,
    Contradiction,
    attempt_noise,
    current_evaluator,
    find_contradiction,
    same_state,
    version_weight,
)
from kernelgraph.service.recording import NO_SOURCE_VECTORS
from kernelgraph.service.store import GraphStore

log = logging.getLogger(__name__)

WRITE_BATCH = 1_000  # rows per write transaction
READ_BATCH = 500  # groups per attempts query


class ConsolidationReport(BaseModel):
    """What one consolidation run found and (unless a dry run) changed in one namespace."""

    namespace: str
    dry_run: bool
    states: int  # explored states examined
    merge_groups: int  # kernels explored as more than one state (one target, one version)
    merged: int  # duplicates merged into their group's state by this run
    rolled_up: int = 0  # states whose rollup this run built or rebuilt (roll-ups written; new duplicates, or none yet: schema 0010)
    already_merged: int  # duplicates merged by earlier runs
    newest_evaluator: int | None  # the newest evaluator that measured here; older ones are superseded
    superseded_evaluator_states: int
    stale_signature_states: int
    weighed: int  # states whose version weight this run set or changed
    repeated_groups: int  # (state, transform, setting) groups holding two or more attempts
    examined_groups: int  # of those, the ones whose figures allow a contradiction (their attempts read)
    contradictions_flagged: int  # new or changed by this run
    contradictions_resolved: int  # no longer disagreeing (re-grouped or re-weighed)
    contradictions_open: int
    parked: int  # unexplored measurements this run took out of the vector index (restored when explored)
    target_similarities: int = 0  # pairs of targets whose measured similarity this run stored or changed
    changes: int  # everything this run wrote (or would write, dry run): 0 on unchanged evidence
    wall_s: float


@dataclass(frozen=True)
class State:
    measurement_id: str
    kernel_id: str | None
    target: str
    task: str | None
    counter_source: str
    evaluator_version: int | None
    signature_version: int | None
    merged_into: str | None
    version_weight: float | None
    signature: tuple[float, ...] | None = None
    signature_dims: tuple[int, ...] | None = None  # the measured dimensions (signature version 2)
    counters_separate_build: bool = False  # schema 0014: cache counters of a rebuild, not the timed object

    @property
    def merge_key(self) -> tuple[str, str, str, int, int, bool] | None:
        """States that measured the same thing the same way (None: no kernel to group by)."""
        if self.kernel_id is None:
            return None
        return (self.kernel_id, self.target, self.counter_source, self.evaluator_version or 1,
                self.signature_version or 1, self.counters_separate_build)  # fmt: skip


def plan_merges(states: Sequence[State]) -> tuple[dict[str, str], list[dict[str, str]], int, int]:
    """(state of every state after this run, merge rows to write, kernels re-measured, already merged).

    Within one kernel's group (merge_key), a state joins the first representative whose signature it
    matches within noise (same_state): representatives are the states earlier runs merged others into
    (so runs agree over time), then the rest by id. Earlier merges are kept as they are.
    """
    groups: dict[tuple[str, str, str, int, int, bool], list[State]] = defaultdict(list)
    for state in states:
        key = state.merge_key
        if key is not None:
            groups[key].append(state)
    canonical = {s.measurement_id: s.merged_into or s.measurement_id for s in states}
    rows: list[dict[str, str]] = []
    multi = already = 0
    for members in groups.values():
        if len(members) < 2:
            continue
        multi += 1
        already += sum(1 for s in members if s.merged_into is not None)
        hubs = {s.merged_into for s in members if s.merged_into is not None}
        open_ = sorted((s for s in members if s.merged_into is None),
                       key=lambda s: (s.measurement_id not in hubs, s.measurement_id))  # fmt: skip
        representatives: list[State] = []
        for state in open_:
            home = next(
                (r for r in representatives
                 if same_state(r.signature, state.signature, r.signature_dims, state.signature_dims)),
                None,
            )  # fmt: skip
            if home is None or state.measurement_id in hubs:
                representatives.append(state)
                continue
            rows.append({"duplicate": state.measurement_id, "canonical": home.measurement_id})
            canonical[state.measurement_id] = home.measurement_id
    return canonical, rows, multi, already


def plan_weights(states: Sequence[State]) -> tuple[list[dict[str, Any]], int | None, int, int]:
    """(weight rows that change something, newest evaluator, superseded states, stale-signature states)."""
    newest = current_evaluator(
        s.evaluator_version for s in states if s.counter_source not in EXTERNAL_COUNTER_SOURCES
    )
    rows: list[dict[str, Any]] = []
    superseded = stale = 0
    for s in states:
        weight = version_weight(
            evaluator_version=s.evaluator_version, counter_source=s.counter_source,
            signature_version=s.signature_version, newest_evaluator=newest,
            current_signature=SIGNATURE_VERSION, counters_separate_build=s.counters_separate_build,
        )  # fmt: skip
        reasons = []
        measured_here = newest is not None and s.counter_source not in EXTERNAL_COUNTER_SOURCES
        if measured_here and newest is not None and (s.evaluator_version or 1) < newest:
            superseded += 1
            reasons.append(f"evaluator {s.evaluator_version or 1} superseded by {newest}")
        if s.counters_separate_build and (newest or 0) >= ADMITTED_OBJECT_EVALUATOR:
            reasons.append("cache counters from a separate build of the source")
        if (s.signature_version or 1) < SIGNATURE_VERSION:
            stale += 1
            reasons.append(f"signature version {s.signature_version or 1} < {SIGNATURE_VERSION}")
        wanted = None if weight == 1.0 else weight
        if wanted != s.version_weight:
            rows.append({"measurement_id": s.measurement_id, "weight": wanted,
                         "reason": "; ".join(reasons) or None})  # fmt: skip
    return rows, newest, superseded, stale


@dataclass
class EvidenceGroup:
    """The aggregates of one (state after merging, transform, setting)."""

    canonical: str
    transform: str
    params_json: str
    measurement_ids: list[str]
    attempts: int = 0
    runtime_attempts: int = 0
    min_log_speedup: float | None = None
    max_log_speedup: float | None = None
    disputed: bool = False

    @property
    def may_contradict(self) -> bool:
        """Could these figures hold a contradiction? (Cheap: read from the aggregates alone.)"""
        if self.attempts < 2:
            return False
        beyond = NOISE_Z * NOISE_FLOOR  # the least any attempt's noise band can be
        speedup = (
            self.min_log_speedup is not None
            and self.max_log_speedup is not None
            and self.max_log_speedup > beyond
            and self.min_log_speedup < -beyond
        )
        return speedup or 0 < self.runtime_attempts < self.attempts or self.disputed


def group_evidence(rows: Sequence[dict[str, Any]], canonical: dict[str, str]) -> list[EvidenceGroup]:
    groups: dict[tuple[str, str, str], EvidenceGroup] = {}
    for row in rows:
        state = canonical.get(row["measurement_id"])
        if state is None:
            continue
        key = (state, row["transform"], row["params_json"])
        group = groups.get(key)
        if group is None:
            group = groups[key] = EvidenceGroup(state, row["transform"], row["params_json"], [])
        if row["measurement_id"] not in group.measurement_ids:  # one aggregate per recording key
            group.measurement_ids.append(row["measurement_id"])
        group.attempts += int(row["attempts"] or 0)
        group.runtime_attempts += int(row["runtime_attempts"] or 0)
        for name, pick in (("min_log_speedup", min), ("max_log_speedup", max)):
            value, current = row[name], getattr(group, name)
            if value is not None:
                setattr(group, name, value if current is None else pick(current, value))
        group.disputed = group.disputed or bool(row["disputed"])
    for group in groups.values():
        group.measurement_ids.sort()
    return sorted(groups.values(), key=lambda g: (g.canonical, g.transform, g.params_json))


def contradiction_id(namespace: str, group: EvidenceGroup) -> str:
    text = f"{namespace}|{group.canonical}|{group.transform}|{group.params_json}"
    return hashlib.sha256(text.encode()).hexdigest()[:32]


def _contradiction_row(
    namespace: str, group: EvidenceGroup, found: Contradiction, facts: State | None
) -> dict[str, Any]:
    s = found.summary
    return {
        "contradiction_id": contradiction_id(namespace, group), "state": group.canonical,
        "measurement_ids": group.measurement_ids, "transform": group.transform,
        "params_json": group.params_json, "task": facts.task if facts else None,
        "target": facts.target if facts else None, "kinds": [k.value for k in found.kinds],
        "attempt_keys": list(found.attempt_keys), "attempts": s.attempts, "helps": found.helps,
        "hurts": found.hurts, "failed_twins": found.failed_twins, "mean_log_speedup": s.mean_log_speedup,
        "sd_log_speedup": s.sd_log_speedup, "min_log_speedup": s.min_log_speedup,
        "max_log_speedup": s.max_log_speedup, "noise": s.noise, "fingerprint": found.fingerprint,
    }  # fmt: skip


def _batches(rows: Sequence[Any], size: int) -> list[Sequence[Any]]:
    return [rows[i : i + size] for i in range(0, len(rows), size)]


def consolidate(
    store: GraphStore,
    namespace: str,
    *,
    dry_run: bool = False,
    say: Callable[[str], None] = lambda text: None,
) -> ConsolidationReport:
    """Merge re-measured states, weigh superseded versions, flag contradictions (see the module docstring)."""
    started = time.perf_counter()
    say("reading states")
    states = [
        State(
            measurement_id=r["measurement_id"],
            kernel_id=r["kernel_id"],
            target=r["target"],
            task=r["task"],
            counter_source=r["counter_source"] or "",
            evaluator_version=r["evaluator_version"],
            signature_version=r["signature_version"],
            merged_into=r["merged_into"],
            version_weight=r["version_weight"],
            signature=tuple(r["signature"]) if r["signature"] is not None else None,
            signature_dims=tuple(r["signature_dims"]) if r["signature_dims"] is not None else None,
            counters_separate_build=bool(r["counters_separate_build"]),
        )
        for r in store.read("consolidation_states", namespace=namespace)
    ]
    by_id = {s.measurement_id: s for s in states}
    canonical, merges, merge_groups, already = plan_merges(states)
    weights, newest, superseded, stale = plan_weights(states)

    say("reading aggregates")
    groups = group_evidence(store.read("consolidation_evidence", namespace=namespace), canonical)
    repeated = [g for g in groups if g.attempts >= 2]
    candidates = [g for g in repeated if g.may_contradict]
    say(f"reading the attempts of {len(candidates):,} groups")
    evidence: dict[int, list[AttemptEvidence]] = defaultdict(list)
    for offset, batch in enumerate(_batches(candidates, READ_BATCH)):
        query = [
            {"group_id": str(offset * READ_BATCH + i), "measurement_ids": g.measurement_ids,
             "transform": g.transform, "params_json": g.params_json}
            for i, g in enumerate(batch)
        ]  # fmt: skip
        for r in store.read("consolidation_group_attempts", namespace=namespace, groups=query):
            evidence[int(r["group_id"])].append(
                AttemptEvidence(
                    attempt_key=r["attempt_key"],
                    outcome=r["outcome"],
                    log_speedup=r["log_speedup"],
                    child_kernel_id=r["child_kernel_id"],
                    noise=attempt_noise(
                        r["parent_median_ns"], r["parent_iqr_ns"], r["child_median_ns"], r["child_iqr_ns"]
                    ),
                    evaluator_version=r["evaluator_version"],
                )
            )
    found: dict[str, dict[str, Any]] = {}
    for index, group in enumerate(candidates):
        contradiction = find_contradiction(evidence.get(index, []))
        if contradiction is not None:
            row = _contradiction_row(namespace, group, contradiction, by_id.get(group.canonical))
            found[row["contradiction_id"]] = row
    known = {
        r["contradiction_id"]: r["fingerprint"]
        for r in store.read("consolidation_contradictions_known", namespace=namespace)
    }
    flags = [row for cid, row in sorted(found.items()) if known.get(cid) != row["fingerprint"]]
    resolves = sorted(set(known) - set(found))

    # States to roll up: those gaining duplicates now, and those whose rollup is missing or stale.
    unrolled = [r["state"] for r in store.read("consolidation_rollups_stale", namespace=namespace)]
    merged = weighed = flagged = resolved = parked = rolled_up = 0
    if dry_run:
        merged, weighed, flagged, resolved = len(merges), len(weights), len(flags), len(resolves)
        rolled_up = len(set(unrolled) | {row["canonical"] for row in merges})
        parked = store.read("consolidation_count_parkable", namespace=namespace)[0]["parkable"]
    else:
        merged, rolled_up = merge_and_roll_up(store, namespace, merges, unrolled, say)
        for batch in _batches(weights, WRITE_BATCH):
            say(f"weighing versions ({weighed:,}/{len(weights):,})")
            weighed += store.write("consolidation_set_weights", namespace=namespace, rows=list(batch))[0][
                "changed"
            ]
        for batch in _batches(flags, WRITE_BATCH // 10):
            say(f"flagging contradictions ({flagged:,}/{len(flags):,})")
            flagged += store.write(
                "consolidation_flag_contradictions", namespace=namespace, rows=list(batch)
            )[0]["written"]
        while True:
            say(f"parking unexplored measurements out of the index ({parked:,})")
            batch_parked = store.write(
                "consolidation_park_measurements",
                namespace=namespace,
                limit=WRITE_BATCH,
                no_source_vectors=NO_SOURCE_VECTORS,
            )[0]["parked"]
            parked += batch_parked
            if batch_parked < WRITE_BATCH:
                break
        if resolves:
            resolved = store.write("consolidation_resolve_contradictions", namespace=namespace, ids=resolves)[
                0
            ]["resolved"]
    say("measuring target similarity")
    similarities = target_similarity.measure(store, namespace, dry_run=dry_run)
    report = ConsolidationReport(
        namespace=namespace, dry_run=dry_run, states=len(states), merge_groups=merge_groups, merged=merged,
        already_merged=already, newest_evaluator=newest, superseded_evaluator_states=superseded,
        stale_signature_states=stale, weighed=weighed, repeated_groups=len(repeated),
        examined_groups=len(candidates), contradictions_flagged=flagged, contradictions_resolved=resolved,
        contradictions_open=len(found), parked=parked, rolled_up=rolled_up,
        target_similarities=similarities,
        changes=merged + rolled_up + weighed + flagged + resolved + parked + similarities,
        wall_s=time.perf_counter() - started,
    )  # fmt: skip
    log.info("consolidated %s: %s", namespace, report.model_dump(exclude={"namespace"}))
    return report


def merge_and_roll_up(
    store: GraphStore,
    namespace: str,
    merges: Sequence[dict[str, str]],
    stale: Sequence[str],
    say: Callable[[str], None] = lambda text: None,
) -> tuple[int, int]:
    """Write `merges` in batches, each batch rolling up the states it merges into in its own transaction
    (so retrieval never sees a merged duplicate outside its state's rollup), then roll up the `stale`
    states left. Returns (duplicates merged, states rolled up)."""
    merged = rolled_up = 0
    done: set[str] = set()
    for batch in _batches(merges, WRITE_BATCH):
        say(f"merging re-measured states ({merged:,}/{len(merges):,})")
        targets = sorted({row["canonical"] for row in batch})
        result = store.write(
            "consolidation_merge_states",
            namespace=namespace,
            rows=list(batch),
            states=targets,
            no_source_vectors=NO_SOURCE_VECTORS,
        )[0]
        merged += result["merged"]
        rolled_up += result["rolled_up"]
        done.update(targets)
    left = [state for state in stale if state not in done]
    for batch in _batches(left, WRITE_BATCH // 10):
        say(f"rolling up merged states ({rolled_up:,})")
        rolled_up += store.write(
            "consolidation_merge_states",
            namespace=namespace,
            rows=[],
            states=list(batch),
            no_source_vectors=NO_SOURCE_VECTORS,
        )[0]["rolled_up"]
    return merged, rolled_up


def roll_up_merged_states(store: GraphStore) -> int:
    """Schema 0010's data step: roll up every state that code before it merged re-measurements into
    (idempotent: a rolled-up state is not found again). Returns the number of states rolled up."""
    done = 0
    for namespace in namespaces_with_states(store):
        stale = [r["state"] for r in store.read("consolidation_rollups_stale", namespace=namespace)]
        done += merge_and_roll_up(store, namespace, [], stale)[1]
        if stale:
            log.info("rolled up %d merged states in %s", len(stale), namespace)
    return done


def namespaces_with_states(store: GraphStore) -> list[str]:
    return [r["namespace"] for r in store.read("namespaces_with_states")]


class ConsolidationSchedule:
    """Runs consolidation over every namespace every `interval_s` seconds in a daemon thread (the
    service starts it when KERNELGRAPH_CONSOLIDATE_INTERVAL_S > 0). A failed run is logged and
    retried at the next tick; `stop()` waits for a run in progress to finish."""

    def __init__(self, store: GraphStore, interval_s: float) -> None:
        self.store = store
        self.interval_s = interval_s
        self.runs = 0
        self.last: list[ConsolidationReport] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="kernelgraph-consolidation", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self, timeout: float = 60.0) -> None:
        self._stop.set()
        self._thread.join(timeout)

    def run_once(self) -> list[ConsolidationReport]:
        reports = [consolidate(self.store, namespace) for namespace in namespaces_with_states(self.store)]
        self.runs += 1
        self.last = reports
        return reports

    def _loop(self) -> None:
        while not self._stop.wait(self.interval_s):
            try:
                self.run_once()
            except Exception:  # a scheduled job must outlive one bad run; the next tick retries
                log.exception("scheduled consolidation failed")
