"""The use cases of the experience graph: record attempts, retrieve, transfer, lineage.

No HTTP or MCP in here: the API, the MCP server and the in-process client all call this. Every
method takes the namespaces the caller may see; isolation between teams is enforced here.
"""

from __future__ import annotations

import json
import logging
import math
import secrets
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from neo4j import ManagedTransaction

from kernelgraph.core.errors import Conflict, Forbidden, InvalidInput, KernelGraphError, NotFound
from kernelgraph.core.models import (
    AttemptRecord,
    HardwareTarget,
    KernelVariant,
    LineageStep,
    Measurement,
    MeasurementRecord,
    MeasurementResult,
    PredictedEffect,
    RecordResult,
    RetrievalExplanation,
    RetrievalMode,
    RetrievedTransform,
    RetrieveRequest,
    RetrieveResponse,
    SourceWeight,
    TargetWeight,
    TransferCell,
    TransferMatrixResponse,
    TransferPrediction,
    TransferResponse,
    TransferRow,
    TransferTarget,
    content_id,
    validate,
)
from kernelgraph.core.ncu import dimension_reads
from kernelgraph.core.signature import (
    MIN_SHARED_DIMENSIONS,
    SIGNATURE_DIM,
    CounterName,
    Signature,
    TargetPeaks,
    compute_signature,
    index_searches,
    plausibility_floor_ns,
    signature_from_values,
)
from kernelgraph.service.consolidation import ConsolidationReport, consolidate
from kernelgraph.service.embeddings import Embedder
from kernelgraph.service.explain import explain
from kernelgraph.service.stats import spearman
from kernelgraph.service.store import REQUEST_WRITE_TIMEOUT_S, GraphStore, Reader
from kernelgraph.service.target_similarity import OTHER_TARGET_WEIGHT, target_gains, target_weights
from kernelgraph.service.transfer import (
    EffectKey,
    TargetFacts,
    predict,
    similarity,
    transfer_matrix,
)
from kernelgraph.service.writer import GroupCommitWriter, WriteJob

log = logging.getLogger(__name__)

# Retrieval knobs; docs/retrieval.md explains each.
# Up to this many explored states, every one is scored exactly: exact answers for small namespaces,
# for a few ms more than the index above a few hundred states (docs/retrieval.md estimates it).
EXACT_SEARCH_MAX_STATES = 1_000
OVERFETCH = 5  # index candidates fetched per wanted neighbour, before namespace/task filtering
MAX_FETCH_K = 2_000
MAX_LABEL_STATES = 5_000  # label and global modes weigh states alike; beyond this, a sample of them
FAILURE_LOG_SPEEDUP = -0.1  # a failed attempt (no runtime) costs a little: it wasted a try
PRIOR_WEIGHT = 1.0  # shrinks transforms seen only a few times, far away, towards zero
MERGED_STATE_SHARE = 4  # a merged state takes at most k / 4 of the k neighbour slots
TARGET_CACHE_SECONDS = 5.0  # how long a replica reuses a target's stored facts (targets())
# Evidence trust (docs/api.md, docs/retrieval.md "No writer dominates"):
EVIDENCE_MAX_SPEEDUP = 1_000.0  # a log speedup counts as evidence clipped to +-log of this
INFLUENCE_BOUND = 0.1  # the most another key's evidence moves a transform's score in your retrieval
LEGACY_KEY = "legacy"  # the recorder of evidence stored before keys were tracked (schema 0015)
PEAK_FIELDS = ("peak_gflops", "peak_gbps")  # a target's peaks: admin-only to change once stored


@dataclass(frozen=True)
class Recorder:
    """Who records or retrieves: an API key's id, and whether its evidence is `verified` (the service's
    own evaluator, in process, or a key of role verifier), and whether it may change stored peaks (admin)."""

    key_id: str
    verified: bool = False
    admin: bool = False


# The service's own process (the in-process client, the demo, imports an operator runs): trusted.
SERVICE = Recorder("service", verified=True, admin=True)


# The yardsticks a measurement carries (core/models.py Measurement; schema 0016), stored as properties
# of the same names, the two speedups computed from the times; absent (null) where not measured.
YARDSTICK_PROPERTIES: tuple[str, ...] = (
    "library",
    "library_median_ns",
    "naive_median_ns",
    "speedup_vs_library",
    "speedup_vs_naive",
    "achieved_gflops",
    "achieved_gbps",
    "roofline_fraction",
)


def peaks_of(target: dict[str, Any]) -> TargetPeaks:
    return TargetPeaks(
        kind=target.get("kind", "cpu"),
        peak_gflops=target.get("peak_gflops"),
        peak_gbps=target.get("peak_gbps"),
        cores=target.get("cores"),
        isa=target.get("isa"),
    )


def _kernel_row(kernel: KernelVariant) -> dict[str, Any]:
    return {
        "kernel_id": kernel.kernel_id,
        "patterns": list(kernel.patterns),
        "props": {
            "task": kernel.task,
            "backend": kernel.backend,
            "family": kernel.family or kernel.patterns[0],
            "variant": kernel.variant,
            "source": kernel.source,
        },
    }


class KnowledgeService:
    def __init__(self, store: GraphStore, embedder: Embedder | None = None) -> None:
        self.store = store
        self.embedder = embedder
        self._large: set[tuple[str, ...]] = set()  # namespace sets past exact-search size
        self._overfetch: dict[tuple[str, ...], int] = {}  # index over-fetch that sufficed, per namespace set
        self.writer = GroupCommitWriter(self._write_attempt_jobs)
        # (namespaces, target name) -> (monotonic time read, target): see targets()
        self._target_cache: dict[tuple[tuple[str, ...], str], tuple[float, dict[str, Any]]] = {}
        self.target_cache_hits = self.target_cache_misses = 0  # served at /metrics

    # ---- targets ---------------------------------------------------------------------------------
    def upsert_targets(
        self,
        namespace: str,
        targets: Sequence[HardwareTarget | dict[str, Any]],
        recorder: Recorder = SERVICE,
    ) -> list[str]:
        """Create or update hardware targets; returns their names.

        Changing the peaks of a stored target is admin-only (403 otherwise) and logged: the service
        checks every time recorded on the target against them.
        """
        models = [t if isinstance(t, HardwareTarget) else validate(HardwareTarget, t) for t in targets]
        names = [t.name for t in models]
        if len(set(names)) != len(names):
            duplicate = next(n for n in names if names.count(n) > 1)
            raise InvalidInput(
                f"target {duplicate!r} appears more than once in one request",
                field=f"targets[{len(names) - 1 - names[::-1].index(duplicate)}].name",
            )
        stored = self.store.read("targets_by_name", namespaces=[namespace], names=sorted(names))
        before = {row["target"]["name"]: row["target"] for row in stored}
        for index, model in enumerate(models):
            old = before.get(model.name)
            if old is None:
                continue
            for peak in PEAK_FIELDS:
                if old.get(peak) is not None and getattr(model, peak) != old.get(peak):
                    if not recorder.admin:
                        raise Forbidden(
                            f"changing the {peak} of stored target {model.name!r} ({old.get(peak)} -> "
                            f"{getattr(model, peak)}) needs an admin key",
                            field=f"targets[{index}].{peak}",
                        )
                    log.warning(
                        "target %s/%s: %s changed from %s to %s by key %s", namespace, model.name, peak,
                        old.get(peak), getattr(model, peak), recorder.key_id,
                    )  # fmt: skip
        rows: list[dict[str, Any]] = []
        for t in models:
            props = t.model_dump(mode="json", exclude={"name"}, exclude_none=True)
            old = before.get(t.name)
            if old is not None and any(props.get(p) != old.get(p) for p in PEAK_FIELDS):
                props["peaks_changed_by"] = recorder.key_id  # who, besides the log line above
            rows.append({"name": t.name, "props": props})
        names = [
            r["name"]
            for r in self.store.write(
                "upsert_targets", namespace=namespace, targets=rows, timeout_s=REQUEST_WRITE_TIMEOUT_S
            )
        ]
        self._target_cache.clear()
        return names

    def targets(self, namespaces: Sequence[str], names: Sequence[str]) -> dict[str, dict[str, Any]]:
        """The stored targets of these names (an unknown name is left out).

        Every record and retrieve call needs its target's peaks; a found target is kept for
        TARGET_CACHE_SECONDS, saving a round trip per call. An unknown one is never cached (it is
        found as soon as it is registered); an update made through another replica shows within
        that time, one made through this one at once.
        """
        spaces = tuple(sorted(namespaces))
        now = time.monotonic()
        found: dict[str, dict[str, Any]] = {}
        missing: list[str] = []
        for name in set(names):
            hit = self._target_cache.get((spaces, name))
            if hit is not None and now - hit[0] < TARGET_CACHE_SECONDS:
                found[name] = hit[1]
            else:
                missing.append(name)
        self.target_cache_hits += len(found)
        self.target_cache_misses += len(missing)
        if missing:
            if len(self._target_cache) > 10_000:
                self._target_cache.clear()
            rows = self.store.read("targets_by_name", namespaces=list(spaces), names=sorted(missing))
            for row in rows:
                found[row["target"]["name"]] = row["target"]
                self._target_cache[(spaces, row["target"]["name"])] = (now, row["target"])
        return found

    def list_targets(self, namespaces: Sequence[str]) -> list[dict[str, Any]]:
        rows = self.store.read("list_targets", namespaces=list(namespaces))
        return [{**r["target"], "measurements": r["measurements"], "attempts": r["attempts"]} for r in rows]

    # ---- recording -------------------------------------------------------------------------------
    def record_attempts(
        self,
        namespace: str,
        attempts: Sequence[AttemptRecord | dict[str, Any]],
        recorder: Recorder = SERVICE,
    ) -> list[RecordResult]:
        """Record attempts in one transaction; a replayed attempt key writes nothing and returns created=False.

        Invalid input raises InvalidInput naming the attempt index and field, before anything is written;
        an attempt key already stored with other content raises Conflict naming the key. Each attempt
        is stored as recorded by `recorder` (verified when it is trusted), and flagged `implausible`
        when its times beat the target's stored peaks for its declared work (then it is no evidence).
        """
        models: list[AttemptRecord] = []
        for index, attempt in enumerate(attempts):
            try:
                models.append(
                    attempt if isinstance(attempt, AttemptRecord) else validate(AttemptRecord, attempt)
                )
            except InvalidInput as exc:
                if len(attempts) == 1:
                    raise
                raise InvalidInput(
                    f"attempts[{index}].{exc.message}",
                    field=f"attempts[{index}].{exc.field}",
                    details=exc.details,
                ) from None
        keys = [m.attempt_key for m in models]
        if len(set(keys)) != len(keys):
            raise InvalidInput("attempt_key values must be unique within one batch", field="attempt_key")
        known = self.targets([namespace], [m.target for m in models])
        for index, model in enumerate(models):
            if model.target not in known:
                raise NotFound(
                    f"unknown target {model.target!r}: register it first (POST /v1/targets)",
                    field=f"attempts[{index}].target" if len(models) > 1 else "target",
                )
        rows = [self._attempt_row(m, known[m.target], recorder) for m in models]
        # Taken before resolving fills in parents: a retried transaction resolves again, and must
        # not take a parent it filled in for one this batch records in full.
        in_batch = _measured_in_batch(rows)
        references = frozenset({m.parent_measurement_id for m in models if m.parent_measurement_id}) - set(
            in_batch
        )

        def resolve(stored: Mapping[str, dict[str, Any]]) -> None:
            self._resolve_parent_references(namespace, models, rows, in_batch, stored)

        # Concurrent callers share transactions (service/writer.py), which look up the parents that
        # their attempts name by measurement id (one query per transaction, not per request) and
        # resolve each caller's references there; each caller is answered once its transaction
        # committed, or with its own error when a reference does not resolve.
        created = self.writer.submit(namespace, rows, references, resolve)
        return [
            RecordResult(
                attempt_key=row["attempt_key"],
                created=created.get(row["attempt_key"], False),
                parent_kernel_id=row["parent"]["kernel_id"],
                child_kernel_id=row["child"]["kernel_id"],
                parent_measurement_id=row["parent_measurements"][0]["measurement_id"]
                if row["parent_measurements"]
                else None,
                child_measurement_id=row["child_measurements"][0]["measurement_id"]
                if row["child_measurements"]
                else None,
            )
            for row in rows
        ]

    def _write_attempt_jobs(self, jobs: Sequence[WriteJob]) -> list[dict[str, bool] | Exception]:
        """The attempt rows of several callers in one transaction; per caller, attempt key -> created,
        or the error of a caller whose parent reference did not resolve (nothing of it is written).

        An attempt key sent by two callers of one group is written once: the first caller gets its
        `created`, the later ones False (their attempt is stored, by the same commit).
        """
        token = secrets.token_hex(16)

        def work(tx: ManagedTransaction) -> list[dict[str, bool] | Exception]:
            created: list[dict[str, bool]] = [{} for _ in jobs]
            failed: dict[int, Exception] = {}  # jobs whose parent references did not resolve
            for namespace in sorted({job.namespace for job in jobs}):
                mine = [i for i, job in enumerate(jobs) if job.namespace == namespace]
                wanted = sorted({ref for i in mine for ref in jobs[i].references})
                stored = {
                    r["measurement_id"]: r
                    for r in (self.store.run_in(tx, "measurements_by_id", namespace=namespace,
                                                measurement_ids=wanted) if wanted else [])
                }  # fmt: skip
                for i in mine:
                    resolve = jobs[i].resolve
                    if resolve is not None:
                        try:
                            resolve(stored)
                        except KernelGraphError as exc:
                            failed[i] = exc
                mine = [i for i in mine if i not in failed]
                keys = sorted({row["attempt_key"] for i in mine for row in jobs[i].rows})
                # attempt key -> the hash of the content stored (or taken by an earlier job) under it
                seen: dict[str, str | None] = {
                    r["attempt_key"]: r["content_hash"]
                    for r in self.store.run_in(
                        tx, "attempts_existing", namespace=namespace, attempt_keys=keys
                    )
                }
                fresh: list[dict[str, Any]] = []
                owner: dict[str, int] = {}
                for i in mine:
                    conflict = _reused_key(jobs[i].rows, seen)
                    if conflict is not None:
                        failed[i] = conflict
                        continue
                    for row in jobs[i].rows:
                        key = row["attempt_key"]
                        if key in seen:
                            created[i][key] = False
                        else:
                            seen[key] = row["attempt"]["content_hash"]
                            owner[key] = i
                            fresh.append(row)
                if not fresh:
                    continue
                # Sorted, so that concurrent transactions lock shared kernels and states in the same order.
                fresh.sort(key=lambda r: r["attempt_key"])
                self.store.run_in(
                    tx, "record_vocabulary", namespace=namespace,
                    transforms=sorted({r["transform"] for r in fresh}),
                    patterns=sorted({p for r in fresh for k in ("parent", "child") for p in r[k]["patterns"]}),
                )  # fmt: skip
                for r in self.store.run_in(
                    tx, "record_attempts", namespace=namespace, write_token=token, rows=fresh
                ):
                    created[owner[r["attempt_key"]]][r["attempt_key"]] = r["created"]
            return [failed.get(i, created[i]) for i in range(len(jobs))]

        return self.store.write_transaction(work, timeout_s=REQUEST_WRITE_TIMEOUT_S)

    def record_measurements(
        self, namespace: str, records: Sequence[MeasurementRecord | dict[str, Any]]
    ) -> list[MeasurementResult]:
        """Record kernels measured outside any attempt, in one transaction; a replay writes nothing.

        Invalid input raises InvalidInput naming the record index and field, before anything is written.
        """
        models: list[MeasurementRecord] = []
        for index, record in enumerate(records):
            try:
                models.append(
                    record if isinstance(record, MeasurementRecord) else validate(MeasurementRecord, record)
                )
            except InvalidInput as exc:
                raise InvalidInput(
                    f"measurements[{index}].{exc.message}",
                    field=f"measurements[{index}].{exc.field}",
                    details=exc.details,
                ) from None
        keys = [m.key for m in models]
        if len(set(keys)) != len(keys):
            raise InvalidInput("key values must be unique within one batch", field="key")
        known = self.targets([namespace], [m.target for m in models])
        for index, model in enumerate(models):
            if model.target not in known:
                raise NotFound(
                    f"unknown target {model.target!r}: register it first (POST /v1/targets)",
                    field=f"measurements[{index}].target",
                )
        rows: list[dict[str, Any]] = []
        for model in models:
            measured = self._measurement_row(model.measurement, model.kernel, known[model.target])
            measured["props"].update(record_key=model.key, run_id=model.run_id, note=model.note)
            rows.append({"key": model.key, "target": model.target, "kernel": _kernel_row(model.kernel),
                         "measurement": measured})  # fmt: skip
        # Sorted, so that concurrent batches lock shared kernels in the same order.
        rows.sort(key=lambda r: r["measurement"]["measurement_id"])
        token = secrets.token_hex(16)

        def work(tx: ManagedTransaction) -> dict[str, bool]:
            patterns = sorted({p for r in rows for p in r["kernel"]["patterns"]})
            self.store.run_in(tx, "record_vocabulary", namespace=namespace, transforms=[], patterns=patterns)
            return {
                r["key"]: r["created"]
                for r in self.store.run_in(
                    tx, "record_measurements", namespace=namespace, write_token=token, rows=rows
                )
            }

        created = self.store.write_transaction(work, timeout_s=REQUEST_WRITE_TIMEOUT_S) if rows else {}
        by_key = {r["key"]: r for r in rows}
        return [
            MeasurementResult(
                key=model.key,
                created=created.get(model.key, False),
                kernel_id=by_key[model.key]["kernel"]["kernel_id"],
                measurement_id=by_key[model.key]["measurement"]["measurement_id"],
            )
            for model in models
        ]

    def _measurement_row(
        self, measurement: Measurement, kernel: KernelVariant, target: dict[str, Any]
    ) -> dict[str, Any]:
        if measurement.signature is not None:
            signature = signature_from_values(measurement.signature, measurement.counter_source)
        else:
            signature = compute_signature(measurement.counter_source, measurement.counters, peaks_of(target))
        kernel_id = kernel.kernel_id
        return {
            "measurement_id": measurement.measurement_id(kernel_id, target["name"]),
            "props": {
                "kernel_id": kernel_id,
                "task": kernel.task,
                "target": target["name"],
                "median_ns": measurement.median_ns,
                "iqr_ns": measurement.iqr_ns,
                "trials": measurement.trials,
                "correct": measurement.correct,
                "static": measurement.static,
                "counter_source": measurement.counter_source.value,
                "counters_json": json.dumps(measurement.counters, sort_keys=True),
                # signature, signature_dims, signature_missing, signature_version and signature_complete
                # (core/signature.py, Signature.stored). Not the per-source vector: a state enters its
                # source's vector index when an attempt first starts from it (record_attempts.cypher),
                # so the indexes hold only what neighbour search can return.
                **signature.stored(indexed=False),
                "taken_at": measurement.taken_at,
                "tool_versions_json": json.dumps(measurement.tool_versions, sort_keys=True),
                "evaluator_version": measurement.evaluator_version,
                "sandboxed": measurement.sandboxed,
                "parent_median_ns": measurement.parent_median_ns,
                **{name: getattr(measurement, name) for name in YARDSTICK_PROPERTIES},  # speedups computed
            },
        }

    def _resolve_parent_references(
        self,
        namespace: str,
        models: Sequence[AttemptRecord],
        rows: list[dict[str, Any]],
        in_batch: Mapping[str, tuple[dict[str, Any], dict[str, Any]]],
        stored: Mapping[str, dict[str, Any]],
    ) -> None:
        """Fill in the parent of each attempt that names it by `parent_measurement_id`.

        The id may name a measurement that another attempt of this batch records in full (`in_batch`,
        from `_measured_in_batch` before any parent was filled in) or one already stored in
        `namespace` (`stored`: measurements_by_id's rows, read in the writing transaction); either
        way the stored result is what the full parent would have written (the same Kernel,
        Measurement and FROM/FROM_STATE relationships). An unknown id, or one measured on another
        target or of another task, raises InvalidInput or NotFound, and nothing of the batch is
        written. Running it again (a retried transaction) fills in the same parents.
        """
        for index, (model, row) in enumerate(zip(models, rows, strict=True)):
            reference = model.parent_measurement_id
            if reference is None:
                continue
            where = f"attempts[{index}]." if len(models) > 1 else ""
            if reference in in_batch:
                measured, kernel = in_batch[reference]
                facts = {
                    "kernel_id": kernel["kernel_id"],
                    "task": kernel["props"]["task"],
                    "target": measured["props"]["target"],
                }
            elif reference in stored:
                facts = stored[reference]
                # Both nodes exist: the write's MERGE matches them and sets no property.
                measured = {"measurement_id": reference, "props": {}}
                kernel = {"kernel_id": facts["kernel_id"], "patterns": [], "props": {}}
            else:
                raise NotFound(
                    f"unknown parent_measurement_id {reference!r}: no such measurement is recorded in "
                    f"namespace {namespace!r} (send the parent and its measurement in full first)",
                    field=f"{where}parent_measurement_id",
                )
            if facts["target"] != model.target:
                raise InvalidInput(
                    f"parent_measurement_id {reference!r} was measured on target {facts['target']!r}, "
                    f"not {model.target!r}",
                    field=f"{where}parent_measurement_id",
                )
            if facts["task"] != model.child.task:
                raise InvalidInput(
                    f"child task {model.child.task!r} differs from the task {facts['task']!r} of the "
                    f"kernel that parent_measurement_id {reference!r} measured",
                    field=f"{where}child.task",
                )
            if model.parent is not None and model.parent.kernel_id != facts["kernel_id"]:
                raise InvalidInput(
                    f"parent is not the kernel that parent_measurement_id {reference!r} measured",
                    field=f"{where}parent",
                )
            row["parent"] = row["parent"] or kernel
            row["parent_measurements"] = [measured]

    def _attempt_row(
        self, attempt: AttemptRecord, target: dict[str, Any], recorder: Recorder
    ) -> dict[str, Any]:
        """The write row of one attempt; a parent named by id is filled in by _resolve_parent_references."""
        speedup = attempt.speedup
        parent_measurements = (
            [self._measurement_row(attempt.parent_measurement, attempt.parent, target)]
            if attempt.parent_measurement and attempt.parent is not None
            else []
        )
        child_measurements = (
            [self._measurement_row(attempt.child_measurement, attempt.child, target)]
            if attempt.child_measurement
            else []
        )
        log_speedup = math.log(speedup) if speedup is not None else None
        clip = math.log(EVIDENCE_MAX_SPEEDUP)
        props: dict[str, Any] = {
            "run_id": attempt.run_id,
            "agent": attempt.agent,
            "target": attempt.target,
            "task": attempt.child.task,  # the parent's too (validated)
            "transform": attempt.transform.name,
            "outcome": attempt.outcome.value,
            "speedup": speedup,
            "log_speedup": log_speedup,
            "params_json": json.dumps(attempt.transform.params, sort_keys=True),
            "diagnosis": attempt.diagnosis,
            "rationale": attempt.rationale,
        }
        # The content a replay must repeat: every stored property and what the attempt links to.
        parent_ref = attempt.parent_measurement_id or (
            parent_measurements[0]["measurement_id"] if parent_measurements else None
        )
        props["content_hash"] = content_id(
            "attempt", props, parent_ref,
            attempt.parent.kernel_id if attempt.parent is not None else None,
            attempt.child.kernel_id, [m["measurement_id"] for m in child_measurements],
            attempt.child_measurement.parent_median_ns if attempt.child_measurement else None,
        )  # fmt: skip
        floor, why = _implausibility(attempt, target)
        props.update(
            recorded_by=recorder.key_id,
            verified=recorder.verified,
            # Only set when true (a null property is not stored): queries test `implausible IS NULL`.
            implausible=True if why else None,
            implausible_reason=why or None,
            # The peaks the check used, as stored with the target when the attempt was recorded.
            plausibility_floor_ns=floor,
            checked_peak_gflops=target.get("peak_gflops"),
            checked_peak_gbps=target.get("peak_gbps"),
        )
        return {
            "attempt_key": attempt.attempt_key,
            "target": attempt.target,
            "transform": attempt.transform.name,
            "evidence_gain": max(-clip, min(clip, log_speedup)) if log_speedup is not None else None,
            "attempt": props,
            "parent": _kernel_row(attempt.parent) if attempt.parent is not None else None,
            "child": _kernel_row(attempt.child),
            "parent_measurements": parent_measurements,
            "child_measurements": child_measurements,
        }

    # ---- operators: quarantine ---------------------------------------------------------------------
    def quarantine(
        self, namespace: str, key_id: str, *, apply: bool = False, release: bool = False
    ) -> dict[str, Any]:
        """Quarantine (`release`: un-quarantine) the evidence key `key_id` recorded in `namespace`.

        Without `apply`, a dry run: counts what would change and changes nothing. Quarantined evidence
        stays stored, is left out of retrieval and consolidation, and comes back on release.
        """
        if not key_id or len(key_id) > 128:
            raise InvalidInput("key_id: a key id as `kernelgraph keys list` shows it", field="key_id")
        row = self.store.write(
            "quarantine_key_evidence", namespace=namespace, key_id=key_id, apply=apply, release=release,
            timeout_s=REQUEST_WRITE_TIMEOUT_S,
        )[0]  # fmt: skip
        if apply:
            log.warning("%s key %s's evidence in namespace %s: %d aggregates, %d attempts",
                        "released" if release else "quarantined", key_id, namespace, row["aggregates"],
                        row["attempts"])  # fmt: skip
        return {"namespace": namespace, "key_id": key_id, "dry_run": not apply, "release": release,
                "aggregates": row["aggregates"], "rollups": row["rollups"], "attempts": row["attempts"],
                "transforms": sorted(row["transforms"])}  # fmt: skip

    # ---- consolidation ---------------------------------------------------------------------------
    def consolidate(self, namespace: str, *, dry_run: bool = False) -> ConsolidationReport:
        """Merge re-measured states, weigh superseded versions, flag contradictions (service/consolidation.py)."""
        return consolidate(self.store, namespace, dry_run=dry_run)

    # ---- retrieval -------------------------------------------------------------------------------
    def retrieve(
        self, namespaces: Sequence[str], request: RetrieveRequest | dict[str, Any], reader: Recorder = SERVICE
    ) -> RetrieveResponse:
        """Transforms that worked from measured states like the given one, ranked, with their evidence.

        `reader`'s own evidence counts in full; every other key's moves a transform's score by less
        than INFLUENCE_BOUND (aggregate_transforms.cypher)."""
        req = request if isinstance(request, RetrieveRequest) else validate(RetrieveRequest, request)
        spaces = list(namespaces)
        target = self.targets(spaces, [req.target]).get(req.target)
        if target is None:
            raise NotFound(f"unknown target {req.target!r}", field="target")
        signature = self._request_signature(req, target)
        if req.mode in (RetrievalMode.COUNTERS, RetrievalMode.HYBRID) and signature is None:
            raise InvalidInput(
                "counters mode needs `signature`, or `counters` with `counter_source`", field="signature"
            )
        embedding: list[float] | None = None
        if req.mode in (RetrievalMode.TEXT, RetrievalMode.HYBRID):
            if not req.source:
                raise InvalidInput("text mode needs the kernel's `source`", field="source")
            self.embed_pending(spaces)  # writes, so before the read transaction
            embedding = self._embedder().embed([req.source])[0]
        if req.mode is RetrievalMode.LABEL and not req.tasks:
            raise InvalidInput("label mode needs `tasks`, the task labels to retrieve", field="tasks")

        # Every query of one retrieval in one read transaction: fewer round trips (docs/scaling.md).
        def read(
            tx: Reader,
        ) -> tuple[dict[str, float], list[dict[str, Any]], RetrievalExplanation | None, list[dict[str, Any]]]:
            # What each other target's evidence weighs: its measured similarity (service/target_similarity.py).
            weights = target_weights(tx, spaces, req.target)
            found, rows = self._neighbours_and_transforms(
                tx, spaces, req, signature, embedding, reader, weights
            )
            # Found little: say why (service/explain.py), in the same transaction as what it explains.
            why = explain(tx, spaces, req, signature, len(found)) if len(found) < req.k else None
            return found, rows, why, weights

        neighbours, rows, explanation, weights = self.store.read_transaction(read)
        transforms = [_retrieved(row) for row in rows]
        keys = {key for row in rows for key in row["keys"]}
        ranked = sorted(neighbours, key=lambda m: (-neighbours[m], m))
        return RetrieveResponse(
            mode=req.mode,
            target=req.target,
            signature=list(signature.values) if signature is not None else None,
            neighbours=len(neighbours),
            neighbour_ids=ranked,
            neighbour_scores=[neighbours[m] for m in ranked],
            transforms=transforms,
            failure_log_speedup=FAILURE_LOG_SPEEDUP,
            prior_weight=PRIOR_WEIGHT,
            evidence_attempts=sum(t.attempts for t in transforms),
            verified_attempts=sum(t.verified_attempts for t in transforms),
            evidence_keys=len(keys),
            verified_only=req.verified_only,
            influence_bound=INFLUENCE_BOUND,
            other_target_weight=OTHER_TARGET_WEIGHT,
            target_weights=[TargetWeight(**w) for w in weights],
            explanation=explanation,
        )

    def _neighbours_and_transforms(
        self,
        reader: Reader,
        spaces: list[str],
        req: RetrieveRequest,
        signature: Signature | None,
        embedding: list[float] | None,
        recorder: Recorder,
        weights: Sequence[dict[str, Any]] = (),
    ) -> tuple[dict[str, float], list[dict[str, Any]]]:
        """The neighbour states (id -> similarity) of a retrieval and the aggregate_transforms rows."""
        neighbours: dict[str, float] = {}
        if signature is not None and req.mode in (RetrievalMode.COUNTERS, RetrievalMode.HYBRID):
            for row in _within_slots(self._nearest_by_signature(reader, spaces, signature, req), req.k):
                neighbours[row["measurement_id"]] = row["score"]
        if embedding is not None:
            for row in _within_slots(self._nearest_by_source(reader, spaces, embedding, req), req.k):
                # Hybrid: a state found both ways keeps the mean of its two similarities.
                previous = neighbours.get(row["measurement_id"])
                neighbours[row["measurement_id"]] = (
                    row["score"] if previous is None else (previous + row["score"]) / 2
                )
        if req.mode in (RetrievalMode.LABEL, RetrievalMode.GLOBAL):
            for row in reader.read(
                "states_by_task",
                tasks=req.tasks if req.mode is RetrievalMode.LABEL else None,
                namespaces=spaces, exclude_tasks=req.excluded_tasks, limit=MAX_LABEL_STATES,
            ):  # fmt: skip
                neighbours[row["measurement_id"]] = row["score"]
        rows: list[dict[str, Any]] = []
        if neighbours:
            rows = reader.read(
                "aggregate_transforms",
                neighbours=[{"measurement_id": m, "score": s} for m, s in neighbours.items()],
                namespaces=spaces,
                target=req.target,
                other_target_weight=OTHER_TARGET_WEIGHT,
                target_weights={w["target"]: w["weight"] for w in weights},
                failure_log_speedup=FAILURE_LOG_SPEEDUP,
                prior_weight=PRIOR_WEIGHT,
                limit=req.limit,
                own_keys=[recorder.key_id, LEGACY_KEY],
                influence_bound=INFLUENCE_BOUND,
                verified_only=req.verified_only,
            )
        return neighbours, rows

    def _request_signature(self, req: RetrieveRequest, target: dict[str, Any]) -> Signature | None:
        if req.signature is not None:
            return signature_from_values(req.signature)
        if req.counters is None:
            return None
        if req.counter_source is None:
            raise InvalidInput("`counter_source` is required with raw `counters`", field="counter_source")
        signature = compute_signature(req.counter_source, req.counters, peaks_of(target))
        if not signature.measured:
            reads = "; ".join(f"{d}: {r}" for d, r in dimension_reads(req.counter_source).items())
            raise InvalidInput(
                f"the counters measure no signature dimension of counter source {req.counter_source.value!r} "
                f"on this target; it reads {reads} (docs/api.md, 'What each counter source fills'; "
                "GET /v1/vocabulary or the MCP tool vocabulary lists the names)",
                field="counters",
            )
        return signature

    def _nearest_by_signature(
        self, reader: Reader, namespaces: list[str], signature: Signature, req: RetrieveRequest
    ) -> list[dict[str, Any]]:
        """The k states nearest to `signature` by the masked, renormalised distance (docs/retrieval.md).

        Small namespaces: every explored state scored exactly. Large ones: one vector index per counter
        source whose states the query can be compared with (`index_searches`), plus exact scoring of the
        few states whose signature is incomplete for their source (kept out of the indexes).
        """
        measured = list(signature.measured)
        if not measured:
            return []
        exact = {
            "signature": list(signature.vector), "measured": measured, "dims": SIGNATURE_DIM,
            "min_shared": min(len(measured), MIN_SHARED_DIMENSIONS), "k": req.k, "namespaces": namespaces,
            "exclude_tasks": req.excluded_tasks,
        }  # fmt: skip
        if self._small(reader, namespaces):
            return reader.read("nearest_states_by_signature_exact", **exact, complete=[True, False])
        rows = reader.read("nearest_states_by_signature_exact", **exact, complete=[False])
        searches = [s.as_param() for s in index_searches(signature)]
        if searches:
            rows += self._nearest_in_indexes(reader, namespaces, searches, req)
        rows.sort(key=lambda r: (-r["score"], r["measurement_id"]))
        return rows[: req.k]

    def _nearest_in_indexes(
        self, reader: Reader, namespaces: list[str], searches: list[dict[str, Any]], req: RetrieveRequest
    ) -> list[dict[str, Any]]:
        """The nearest complete states through the per-source vector indexes, enough to fill k slots.

        Each index holds explored states only (a measurement enters when an attempt first starts from
        it), but also other namespaces' and held-out tasks'; when they crowd the candidates out of k
        slots, fetch more (x4, up to MAX_FETCH_K). The over-fetch that sufficed is remembered per
        namespace set, so the next query starts there.
        """
        key = tuple(sorted(namespaces))
        overfetch = self._overfetch.get(key, OVERFETCH)
        while True:
            fetch = min(req.k * overfetch, MAX_FETCH_K)
            rows = reader.read(
                "nearest_states_by_signature",
                searches=searches, fetch_k=fetch, k=req.k, namespaces=namespaces,
                exclude_tasks=req.excluded_tasks,
            )  # fmt: skip
            if _slots(rows, req.k) >= req.k or fetch >= MAX_FETCH_K:
                self._overfetch[key] = overfetch
                return rows
            overfetch *= 4

    def _small(self, reader: Reader, namespaces: list[str]) -> bool:
        """Few enough explored states for exact scoring? A large verdict is kept: nothing is ever deleted."""
        key = tuple(sorted(namespaces))
        if key in self._large:
            return False
        states = reader.read(
            "count_explored_states", namespaces=namespaces, limit=EXACT_SEARCH_MAX_STATES + 1
        )[0]["states"]
        if states > EXACT_SEARCH_MAX_STATES:
            self._large.add(key)
        return states <= EXACT_SEARCH_MAX_STATES

    def _nearest_by_source(
        self, reader: Reader, namespaces: list[str], embedding: list[float], req: RetrieveRequest
    ) -> list[dict[str, Any]]:
        if self._small(reader, namespaces):  # searched as counters are, so the two baselines compare
            return reader.read(
                "nearest_states_by_source_exact",
                embedding=embedding, k=req.k, namespaces=namespaces, exclude_tasks=req.excluded_tasks,
            )  # fmt: skip
        return reader.read(
            "nearest_states_by_source",
            embedding=embedding, fetch_k=min(req.k * OVERFETCH, MAX_FETCH_K), k=req.k,
            namespaces=namespaces, exclude_tasks=req.excluded_tasks,
        )  # fmt: skip

    def _embedder(self) -> Embedder:
        if self.embedder is None:
            raise InvalidInput("text retrieval is not available: this service has no embedder", field="mode")
        return self.embedder

    def embed_pending(self, namespaces: Sequence[str], batch: int = 256) -> int:
        """Embed the sources of kernels recorded since the last call (recording defers it to stay fast)."""
        embedder = self._embedder()
        done = 0
        while True:
            rows = self.store.read("kernels_missing_embedding", namespaces=list(namespaces), limit=batch)
            if not rows:
                return done
            vectors = embedder.embed([row["source"] for row in rows])
            self.store.write(
                "set_kernel_embeddings",
                rows=[
                    {"namespace": r["namespace"], "kernel_id": r["kernel_id"], "embedding": v}
                    for r, v in zip(rows, vectors, strict=True)
                ],
            )
            done += len(rows)

    # ---- transfer, lineage, leaderboards ---------------------------------------------------------
    def transfer(
        self, namespaces: Sequence[str], source: str, destination: str, pattern: str | None = None
    ) -> TransferResponse:
        """Does a transform's effect on `source` predict its effect on `destination`?"""
        known = self.targets(namespaces, [source, destination])
        for name, field in ((source, "source_target"), (destination, "destination_target")):
            if name not in known:
                raise NotFound(f"unknown target {name!r}", field=field)
        rows = self.store.read(
            "transfer_pairs",
            namespaces=list(namespaces), source=source, destination=destination, pattern=pattern,
            failure_log_speedup=FAILURE_LOG_SPEEDUP,
        )  # fmt: skip
        by_transform: dict[str, list[dict[str, Any]]] = {}
        for row in rows:
            by_transform.setdefault(row["transform"], []).append(row)
        transforms = []
        for name, pairs in sorted(by_transform.items()):
            xs = [p["source_gain"] for p in pairs]
            ys = [p["destination_gain"] for p in pairs]
            transforms.append(
                TransferRow(
                    transform=name,
                    pairs=len(pairs),
                    rank_correlation=spearman(xs, ys),
                    agreement_rate=sum((x > 0) == (y > 0) for x, y in zip(xs, ys, strict=True)) / len(pairs),
                    mean_log_speedup_source=sum(xs) / len(xs),
                    mean_log_speedup_destination=sum(ys) / len(ys),
                    examples=sorted(pairs, key=lambda p: -p["source_gain"])[:5],
                )
            )
        return TransferResponse(
            source_target=source,
            destination_target=destination,
            pattern=pattern,
            transforms=transforms,
            overall_rank_correlation=spearman(
                [r["source_gain"] for r in rows], [r["destination_gain"] for r in rows]
            ),
        )

    def transfer_data(
        self, namespaces: Sequence[str], transform: str | None = None
    ) -> tuple[list[TargetFacts], dict[str, dict[EffectKey, float]], dict[EffectKey, str]]:
        """Targets (architecture order; superseded ones left out), their measured gains, kernel tasks."""
        return target_gains(self.store, namespaces, transform)

    def transfer_matrix(
        self, namespaces: Sequence[str], transform: str | None = None, resamples: int = 1_000
    ) -> TransferMatrixResponse:
        """For every ordered pair of targets: Spearman of the log speedups of the same transform on the
        same kernel, the number of such pairs and a bootstrap 95% CI; targets in architecture order."""
        targets, gains, _ = self.transfer_data(namespaces, transform)
        cells = transfer_matrix(gains, [t.name for t in targets], resamples=resamples)
        return TransferMatrixResponse(
            transform=transform,
            resamples=resamples,
            targets=[
                TransferTarget(
                    name=t.name,
                    arch=t.arch,
                    family=t.family,
                    peak_gflops=t.peak_gflops,
                    peak_gbps=t.peak_gbps,
                    effects=len(gains[t.name]),
                )
                for t in targets
            ],
            cells=[TransferCell(**vars(c)) for c in cells],
        )

    def predict_transfer(
        self, namespaces: Sequence[str], target: str, transform: str | None = None
    ) -> TransferPrediction:
        """Predict each effect on `target` from the other targets alone, each weighted by its measured
        transfer to targets like `target` (service/transfer.py). Whatever `target` itself measured is
        held out of the prediction and only reported next to it."""
        stored = self.targets(namespaces, [target]).get(target)
        if stored is None:
            raise NotFound(f"unknown target {target!r}", field="target")
        facts = TargetFacts(
            target, str(stored.get("arch", "")), stored.get("peak_gflops"), stored.get("peak_gbps")
        )
        targets, gains, tasks = self.transfer_data(namespaces, transform)
        sources = [t for t in targets if t.name != target]
        predictions, weights = predict(facts, sources, gains)
        measured = gains.get(target, {})
        effects = [
            PredictedEffect(
                transform=key[0],
                params=json.loads(key[1]),
                kernel_id=key[2],
                task=tasks[key],
                predicted_speedup=math.exp(value),
                sources=count,
                measured_speedup=math.exp(measured[key]) if key in measured else None,
            )
            for key, (value, count) in sorted(predictions.items(), key=lambda item: -item[1][0])
        ]
        both = [key for key in predictions if key in measured]
        return TransferPrediction(
            target=target,
            transform=transform,
            weights=[
                SourceWeight(
                    target=s.name,
                    similarity=similarity(facts, s),
                    estimated_rank_correlation=weights[s.name][0],
                    weight=weights[s.name][1],
                )
                for s in sorted(sources, key=lambda s: -weights[s.name][1])
            ],
            predictions=effects,
            rank_correlation_with_measured=spearman(
                [predictions[k][0] for k in both], [measured[k] for k in both]
            ),
            helps_hurts_accuracy=sum((predictions[k][0] > 0) == (measured[k] > 0) for k in both) / len(both)
            if both
            else None,
        )

    def lineage(self, namespaces: Sequence[str], kernel_id: str, max_depth: int = 50) -> list[LineageStep]:
        """The kernel and its ancestors, nearest first, each with the transform that produced the step."""
        rows = self.store.read(
            "kernel_lineage", namespaces=list(namespaces), kernel_id=kernel_id, max_depth=max_depth
        )
        if not rows:
            raise NotFound(
                f"no kernel {kernel_id!r} in namespace(s) {', '.join(namespaces)}", field="kernel_id"
            )
        evidence = {
            e["attempt_key"]: e
            for e in self.evidence(namespaces, [r["attempt_key"] for r in rows if r["attempt_key"]])
        }
        return [
            LineageStep(
                kernel_id=r["kernel_id"],
                task=r["task"],
                variant=r["variant"] or "",
                transform=r["transform"],
                outcome=evidence.get(r["attempt_key"], {}).get("outcome"),
                speedup=evidence.get(r["attempt_key"], {}).get("speedup"),
                depth=r["depth"],
            )
            for r in rows
        ]

    def evidence(self, namespaces: Sequence[str], attempt_keys: Sequence[str]) -> list[dict[str, Any]]:
        """The attempts behind a recommendation, in full."""
        rows = self.store.read(
            "attempt_evidence", namespaces=list(namespaces), attempt_keys=list(attempt_keys)
        )
        return [row["attempt"] for row in rows]

    def leaderboard(
        self,
        namespaces: Sequence[str],
        pattern: str | None = None,
        target: str | None = None,
        limit: int = 100,
    ) -> list[dict[str, Any]]:
        """Transforms ranked per access pattern and target."""
        return self.store.read(
            "transform_leaderboard", namespaces=list(namespaces), pattern=pattern, target=target, limit=limit
        )

    def list_transforms(self, namespaces: Sequence[str]) -> list[dict[str, Any]]:
        return self.store.read("list_transforms", namespaces=list(namespaces))


def _reused_key(rows: Sequence[dict[str, Any]], seen: Mapping[str, str | None]) -> Conflict | None:
    """A Conflict naming the first attempt key of `rows` stored (or taken) with other content, if any.

    A key stored before schema 0015 has no content hash: sending it again stays a replay."""
    for index, row in enumerate(rows):
        key = row["attempt_key"]
        stored = seen.get(key)
        if key in seen and stored is not None and stored != row["attempt"]["content_hash"]:
            return Conflict(
                f"attempt_key {key!r} is already stored with other content: an attempt key names one "
                "attempt; give a new attempt a new key (the same content again is an idempotent replay)",
                field="attempt_key" if len(rows) == 1 else f"attempts[{index}].attempt_key",
            )
    return None


def _implausibility(attempt: AttemptRecord, target: Mapping[str, Any]) -> tuple[float | None, str]:
    """The least time the attempt's declared work allows on `target`'s stored peaks (None: no work
    or peaks to judge by), and why one of its times beats it ("" when none does)."""
    floor: float | None = None
    reasons = []
    for name, measured in (("parent_measurement", attempt.parent_measurement),
                           ("child_measurement", attempt.child_measurement)):  # fmt: skip
        if measured is None:
            continue
        least = plausibility_floor_ns(
            measured.counters.get(CounterName.FLOPS), measured.counters.get(CounterName.BYTES),
            target.get("peak_gflops"), target.get("peak_gbps"),
        )  # fmt: skip
        if least is None:
            continue
        floor = least if floor is None else max(floor, least)
        for field, value in (
            ("median_ns", measured.median_ns),
            ("parent_median_ns", measured.parent_median_ns),
        ):
            if value is not None and value < least:
                reasons.append(f"{name}.{field} {value:g} ns is below the {least:.4g} ns its declared work "
                               "takes at the target's peaks")  # fmt: skip
    return floor, "; ".join(reasons)


def _measured_in_batch(rows: list[dict[str, Any]]) -> dict[str, tuple[dict[str, Any], dict[str, Any]]]:
    """Measurement id -> (measurement row, kernel row) of every measurement the batch records in full."""
    return {
        measured["measurement_id"]: (measured, row[side])
        for row in rows
        for side in ("parent", "child")
        for measured in row[f"{side}_measurements"]
    }


def _within_slots(rows: list[dict[str, Any]], k: int) -> list[dict[str, Any]]:
    """The nearest states, best first, until they hold `k` measurements: a state that consolidation
    merged re-measurements into takes one slot per measurement it stands for (`slots`), at most
    k / MERGED_STATE_SHARE: merging neither widens the neighbourhood to farther states nor lets one
    kernel measured a hundred times push every other state out (docs/retrieval.md)."""
    kept, used = [], 0
    for row in rows:
        if used >= k:
            break
        kept.append(row)
        used += _slots([row], k)
    return kept


def _slots(rows: list[dict[str, Any]], k: int) -> int:
    """Neighbour slots the rows take: one per measurement a state stands for, at most k / MERGED_STATE_SHARE."""
    most = max(1, k // MERGED_STATE_SHARE)
    return sum(min(int(row.get("slots") or 1), most) for row in rows)


def _retrieved(row: dict[str, Any]) -> RetrievedTransform:
    """A row of aggregate_transforms with its JSON-encoded parameters decoded."""
    best = row["best_example"]
    if best is not None:
        best = {**best, "params": json.loads(best["params"])}
    by_params = [{**p, "params": json.loads(p["params"])} for p in row["by_params"]]
    return RetrievedTransform(
        **{
            **row,
            "best_example": best,
            "params": [json.loads(p) for p in row["params"]],
            "by_params": by_params,
            "keys": len(row["keys"]),
        }
    )
