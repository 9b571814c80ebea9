"""Recording attempts and measurements: validating a batch, building its write rows, the parent an
attempt names by measurement id, and the transaction body the group-commit writer (service/writer.py)
runs for several callers at once (cypher/record_attempts.cypher writes the rows)."""

from __future__ import annotations

import json
import math
import secrets
from collections.abc import Mapping, Sequence
from typing import Any

from neo4j import ManagedTransaction

from kernelgraph.core.errors import Conflict, InvalidInput, KernelGraphError, NotFound
from kernelgraph.core.models import (
    AttemptRecord,
    KernelVariant,
    Measurement,
    MeasurementRecord,
    MeasurementResult,
    RecordResult,
    content_id,
)
from kernelgraph.core.signature import (
    SOURCE_SCALES_PARAM,
    CounterName,
    CounterSource,
    plausibility_floor_ns,
    source_property,
)
from kernelgraph.service.batches import batch_field, refuse_repeated, validate_batch
from kernelgraph.service.recorder import SERVICE, Recorder
from kernelgraph.service.store import REQUEST_WRITE_TIMEOUT_S, GraphStore
from kernelgraph.service.targets import Targets, peaks_of
from kernelgraph.service.writer import GroupCommitWriter, WriteJob

# Every per-source vector property (core/signature.py source_property) -> null: `SET m += ` this takes a
# state out of every vector index, without the Cypher spelling the property names itself.
NO_SOURCE_VECTORS: dict[str, None] = {source_property(source): None for source in CounterSource}
# Each counter source -> its per-source vector property, for the Cypher that sets it (record_attempts.cypher).
SOURCE_VECTORS: dict[str, str] = {source.value: source_property(source) for source in CounterSource}
EVIDENCE_MAX_SPEEDUP = 1_000.0  # a log speedup counts as evidence clipped to +-log of this (docs/api.md)


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


def kernel_row(kernel: KernelVariant) -> dict[str, Any]:
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


class Recording:
    """Records attempts (through the group-commit writer) and measurements outside attempts."""

    def __init__(self, store: GraphStore, targets: Targets) -> None:
        self.store = store
        self.targets = targets
        self.writer = GroupCommitWriter(self.write_attempt_jobs)

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
        models = validate_batch(AttemptRecord, attempts, "attempts", single_unprefixed=True)
        refuse_repeated([m.attempt_key for m in models], "attempt_key")
        known = self._registered_targets(
            namespace, [m.target for m in models], "attempts", single_unprefixed=True
        )
        rows = [attempt_row(m, known[m.target], recorder) for m in models]
        # Taken before resolving fills in parents: a retried transaction resolves again, and must
        # not take a parent it filled in for one this batch records in full.
        in_batch = measured_in_batch(rows)
        references = frozenset({m.parent_measurement_id for m in models if m.parent_measurement_id}) - set(
            in_batch
        )

        def resolve(stored: Mapping[str, dict[str, Any]]) -> None:
            self.resolve_parent_references(namespace, models, rows, in_batch, stored)

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

    def _registered_targets(
        self, namespace: str, names: Sequence[str], batch: str, *, single_unprefixed: bool = False
    ) -> dict[str, dict[str, Any]]:
        """The stored targets the records of `batch` name, or NotFound naming the first record whose
        target is not registered (`single_unprefixed`: as validate_batch)."""
        known = self.targets.get([namespace], names)
        for index, name in enumerate(names):
            if name not in known:
                raise NotFound(
                    f"unknown target {name!r}: register it first (POST /v1/targets)",
                    field=batch_field(batch, index, "target", single=single_unprefixed and len(names) == 1),
                )
        return known

    def write_attempt_jobs(self, jobs: Sequence[WriteJob]) -> list[dict[str, bool] | Exception]:
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
                    conflict = reused_key(jobs[i].rows, seen)
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
                    tx,
                    "record_attempts",
                    namespace=namespace,
                    write_token=token,
                    source_vectors=SOURCE_VECTORS,
                    source_scales=SOURCE_SCALES_PARAM,
                    rows=fresh,
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
        models = validate_batch(MeasurementRecord, records, "measurements")
        refuse_repeated([m.key for m in models], "key")
        known = self._registered_targets(namespace, [m.target for m in models], "measurements")
        rows: list[dict[str, Any]] = []
        for model in models:
            measured = measurement_row(model.measurement, model.kernel, known[model.target])
            measured["props"].update(record_key=model.key, run_id=model.run_id, note=model.note)
            rows.append({"key": model.key, "target": model.target, "kernel": kernel_row(model.kernel),
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

    def resolve_parent_references(
        self,
        namespace: str,
        models: Sequence[AttemptRecord],
        rows: list[dict[str, Any]],
        in_batch: Mapping[str, tuple[dict[str, Any], dict[str, Any]]],
        stored: Mapping[str, dict[str, Any]],
    ) -> None:
        """Fill in the parent of each attempt that names it by `parent_measurement_id`.

        The id may name a measurement that another attempt of this batch records in full (`in_batch`,
        from `measured_in_batch` before any parent was filled in) or one already stored in
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
                    field=batch_field("attempts", index, "parent_measurement_id", single=len(models) == 1),
                )
            if facts["target"] != model.target:
                raise InvalidInput(
                    f"parent_measurement_id {reference!r} was measured on target {facts['target']!r}, "
                    f"not {model.target!r}",
                    field=batch_field("attempts", index, "parent_measurement_id", single=len(models) == 1),
                )
            if facts["task"] != model.child.task:
                raise InvalidInput(
                    f"child task {model.child.task!r} differs from the task {facts['task']!r} of the "
                    f"kernel that parent_measurement_id {reference!r} measured",
                    field=batch_field("attempts", index, "child.task", single=len(models) == 1),
                )
            if model.parent is not None and model.parent.kernel_id != facts["kernel_id"]:
                raise InvalidInput(
                    f"parent is not the kernel that parent_measurement_id {reference!r} measured",
                    field=batch_field("attempts", index, "parent", single=len(models) == 1),
                )
            row["parent"] = row["parent"] or kernel
            row["parent_measurements"] = [measured]


def measurement_row(
    measurement: Measurement, kernel: KernelVariant, target: dict[str, Any]
) -> dict[str, Any]:
    signature = measurement.signature_on(peaks_of(target))
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


def attempt_row(attempt: AttemptRecord, target: dict[str, Any], recorder: Recorder) -> dict[str, Any]:
    """The write row of one attempt; a parent named by id is filled in by Recording.resolve_parent_references."""
    speedup = attempt.speedup
    parent_measurements = (
        [measurement_row(attempt.parent_measurement, attempt.parent, target)]
        if attempt.parent_measurement and attempt.parent is not None
        else []
    )
    child_measurements = (
        [measurement_row(attempt.child_measurement, attempt.child, target)]
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
    floor, why = implausibility(attempt, target)
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
        "parent": kernel_row(attempt.parent) if attempt.parent is not None else None,
        "child": kernel_row(attempt.child),
        "parent_measurements": parent_measurements,
        "child_measurements": child_measurements,
    }


def reused_key(rows: Sequence[dict[str, Any]], seen: Mapping[str, str | None]) -> Conflict | None:
    """A Conflict naming the first attempt key of `rows` stored (or taken) with other content, if any.

    A key stored before schema 0015 has no content hash: sending it again stays a replay."""
    for index, row in enumerate(rows):
        key = row["attempt_key"]
        stored = seen.get(key)
        if key in seen and stored is not None and stored != row["attempt"]["content_hash"]:
            return Conflict(
                f"attempt_key {key!r} is already stored with other content: an attempt key names one "
                "attempt; give a new attempt a new key (the same content again is an idempotent replay)",
                field=batch_field("attempts", index, "attempt_key", single=len(rows) == 1),
            )
    return None


def implausibility(attempt: AttemptRecord, target: Mapping[str, Any]) -> tuple[float | None, str]:
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


def measured_in_batch(rows: list[dict[str, Any]]) -> dict[str, tuple[dict[str, Any], dict[str, Any]]]:
    """Measurement id -> (measurement row, kernel row) of every measurement the batch records in full."""
    return {
        measured["measurement_id"]: (measured, row[side])
        for row in rows
        for side in ("parent", "child")
        for measured in row[f"{side}_measurements"]
    }
