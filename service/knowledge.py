"""The use cases of the experience graph: record attempts, retrieve, transfer, lineage.

No HTTP or MCP in here: the API, the MCP server and the in-process client all call this. Every
method takes the namespaces the caller may see; isolation between teams is enforced here.
"""

from __future__ import annotations

import json
import logging
import math
import secrets
from collections.abc import Sequence
from typing import Any

from neo4j import ManagedTransaction

from service.embeddings import Embedder
from service.errors import InvalidInput, NotFound
from service.models import (
    AttemptRecord,
    HardwareTarget,
    KernelVariant,
    Measurement,
    RecordResult,
    validate,
)
from service.signature import TargetPeaks, compute_signature
from service.store import GraphStore

log = logging.getLogger(__name__)


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

    # ---- targets ---------------------------------------------------------------------------------
    def upsert_targets(self, namespace: str, targets: Sequence[HardwareTarget | dict[str, Any]]) -> list[str]:
        """Create or update hardware targets; returns their names."""
        models = [t if isinstance(t, HardwareTarget) else validate(HardwareTarget, t) for t in targets]
        rows = [
            {"name": t.name, "props": t.model_dump(mode="json", exclude={"name"}, exclude_none=True)} for t in models
        ]
        return [r["name"] for r in self.store.write("upsert_targets", namespace=namespace, targets=rows)]

    def targets(self, namespaces: Sequence[str], names: Sequence[str]) -> dict[str, dict[str, Any]]:
        rows = self.store.read("targets_by_name", namespaces=list(namespaces), names=list(set(names)))
        return {row["target"]["name"]: row["target"] for row in rows}

    def list_targets(self, namespaces: Sequence[str]) -> list[dict[str, Any]]:
        rows = self.store.read("list_targets", namespaces=list(namespaces))
        return [{**r["target"], "measurements": r["measurements"], "attempts": r["attempts"]} for r in rows]

    # ---- recording -------------------------------------------------------------------------------
    def record_attempts(
        self, namespace: str, attempts: Sequence[AttemptRecord | dict[str, Any]]
    ) -> list[RecordResult]:
        """Record attempts in one transaction; a replayed attempt key writes nothing and returns created=False.

        Invalid input raises InvalidInput naming the attempt index and field, before anything is written.
        """
        models: list[AttemptRecord] = []
        for index, attempt in enumerate(attempts):
            try:
                models.append(attempt if isinstance(attempt, AttemptRecord) else validate(AttemptRecord, attempt))
            except InvalidInput as exc:
                if len(attempts) == 1:
                    raise
                raise InvalidInput(
                    f"attempts[{index}].{exc.message}", field=f"attempts[{index}].{exc.field}", details=exc.details
                ) from None
        keys = [m.attempt_key for m in models]
        if len(set(keys)) != len(keys):
            raise InvalidInput("attempt_key values must be unique within one batch", field="attempt_key")
        known = self.targets([namespace], [m.target for m in models])
        for index, model in enumerate(models):
            if model.target not in known:
                raise InvalidInput(
                    f"unknown target {model.target!r}: register it first (POST /v1/targets)",
                    field=f"attempts[{index}].target" if len(models) > 1 else "target",
                )
        rows = [self._attempt_row(m, known[m.target]) for m in models]
        token = secrets.token_hex(16)

        def work(tx: ManagedTransaction) -> dict[str, bool]:
            existing = {
                r["attempt_key"] for r in self.store.run_in(tx, "attempts_existing", namespace=namespace, attempt_keys=keys)
            }
            fresh = [row for row in rows if row["attempt_key"] not in existing]
            created = {key: False for key in existing}
            if fresh:
                for r in self.store.run_in(tx, "record_attempts", namespace=namespace, write_token=token, rows=fresh):
                    created[r["attempt_key"]] = r["created"]
            return created

        created = self.store.write_transaction(work)
        return [
            RecordResult(
                attempt_key=row["attempt_key"],
                created=created.get(row["attempt_key"], False),
                parent_kernel_id=row["parent"]["kernel_id"],
                child_kernel_id=row["child"]["kernel_id"],
                parent_measurement_id=row["parent_measurements"][0]["measurement_id"] if row["parent_measurements"] else None,
                child_measurement_id=row["child_measurements"][0]["measurement_id"] if row["child_measurements"] else None,
            )
            for row in rows
        ]

    def _measurement_row(
        self, measurement: Measurement, kernel: KernelVariant, target: dict[str, Any]
    ) -> dict[str, Any]:
        signature = measurement.signature
        missing: list[str] = []
        if signature is None:
            computed = compute_signature(measurement.counter_source, measurement.counters, peaks_of(target))
            signature, missing = list(computed.vector), list(computed.missing)
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
                "signature": signature,
                "signature_version": measurement.signature_version,
                "signature_missing": missing,
                "taken_at": measurement.taken_at,
                "tool_versions_json": json.dumps(measurement.tool_versions, sort_keys=True),
            },
        }

    def _attempt_row(self, attempt: AttemptRecord, target: dict[str, Any]) -> dict[str, Any]:
        speedup = attempt.speedup
        return {
            "attempt_key": attempt.attempt_key,
            "target": attempt.target,
            "transform": attempt.transform.name,
            "attempt": {
                "run_id": attempt.run_id,
                "agent": attempt.agent,
                "target": attempt.target,
                "task": attempt.parent.task,
                "transform": attempt.transform.name,
                "outcome": attempt.outcome.value,
                "speedup": speedup,
                "log_speedup": math.log(speedup) if speedup is not None else None,
                "params_json": json.dumps(attempt.transform.params, sort_keys=True),
                "diagnosis": attempt.diagnosis,
                "rationale": attempt.rationale,
            },
            "parent": _kernel_row(attempt.parent),
            "child": _kernel_row(attempt.child),
            "parent_measurements": [self._measurement_row(attempt.parent_measurement, attempt.parent, target)]
            if attempt.parent_measurement
            else [],
            "child_measurements": [self._measurement_row(attempt.child_measurement, attempt.child, target)]
            if attempt.child_measurement
            else [],
        }

    def require_kernel(self, namespaces: Sequence[str], kernel_id: str) -> None:
        if not self.store.read("kernel_exists", namespaces=list(namespaces), kernel_id=kernel_id):
            raise NotFound(f"no kernel {kernel_id!r} in namespace(s) {', '.join(namespaces)}", field="kernel_id")
