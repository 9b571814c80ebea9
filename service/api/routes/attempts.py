"""Recording attempts (idempotent on attempt_key) and measurements outside attempts, in batches of up to MAX_BATCH."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Annotated, Any, Self

from fastapi import APIRouter, Response
from pydantic import BaseModel, ConfigDict, Field

from kernelgraph.core.errors import InvalidInput
from kernelgraph.core.models import (
    MAX_BATCH,
    AttemptRecord,
    MeasurementRecord,
    MeasurementResult,
    RecordResult,
)
from kernelgraph.service.api.deps import KnowledgeDep, RecorderDep, WriteNamespace
from kernelgraph.service.api.responses import keyed
from kernelgraph.service.batches import item_error, refuse_oversized, validate_batch

router = APIRouter(tags=["attempts"])


def _records(model: type[BaseModel], description: str) -> Any:
    """The field of a batch's records: taken raw and validated one by one (service/batches.py), so that a
    bad one is named by its index; OpenAPI shows each as `model`."""
    return Field(
        min_length=1,
        description=description,
        json_schema_extra={"items": {"$ref": f"#/components/schemas/{model.__name__}"}},
    )


class _Counted(BaseModel):
    """What a batch write did: how many records it created, how many were replays of stored ones."""

    namespace: str
    created: int
    replayed: int

    @classmethod
    def of(cls, namespace: str, results: Sequence[RecordResult | MeasurementResult]) -> Self:
        created = sum(1 for r in results if r.created)
        return cls.model_validate(
            {
                "namespace": namespace,
                "created": created,
                "replayed": len(results) - created,
                "results": results,
            }
        )


class AttemptBatch(BaseModel):
    model_config = ConfigDict(extra="forbid")

    attempts: Annotated[
        list[dict[str, Any]],
        _records(
            AttemptRecord,
            f"Up to {MAX_BATCH} AttemptRecord objects (the schema of POST /v1/attempts) "
            "with distinct `attempt_key`s; more is refused with 413.",
        ),
    ]


class BatchResult(_Counted):
    results: list[RecordResult]


@router.post(
    "/attempts",
    responses={201: {"model": RecordResult, "description": "Stored."}, **keyed(404, 409, body=True)},
)
def record_attempt(
    attempt: AttemptRecord,
    knowledge: KnowledgeDep,
    namespace: WriteNamespace,
    recorder: RecorderDep,
    response: Response,
) -> RecordResult:
    """Record one attempt (parent kernel + transform -> child kernel, its measurements and outcome).

    201 when it was stored; 200 with `created: false` when an attempt with the same `attempt_key` and
    the same content is already stored (a replay writes nothing); 409 naming `attempt_key` when it is
    stored with other content. The target must be registered first (POST /v1/targets). A `speedup`
    must be `child_measurement.parent_median_ns / child_measurement.median_ns` (422 otherwise), and
    the outcome agree with it and with correctness (docs/api.md, "Consistency").
    """
    result = knowledge.record_attempts(namespace, [attempt], recorder)[0]
    response.status_code = 201 if result.created else 200
    return result


@router.post("/attempts/batch", responses=keyed(404, 409, body=True))
def record_attempts(
    batch: AttemptBatch, knowledge: KnowledgeDep, namespace: WriteNamespace, recorder: RecorderDep
) -> BatchResult:
    """Record up to 1,000 attempts in one transaction: all are stored, or none is.

    A bad attempt is reported as `attempts[i].<field>` before anything is written; more than 1,000
    attempts is refused with 413. Replayed attempt keys come back with `created: false`.
    """
    refuse_oversized(batch.attempts, "attempts")
    models = validate_batch(AttemptRecord, batch.attempts, "attempts")
    try:
        results = knowledge.record_attempts(namespace, models, recorder)
    except InvalidInput as exc:
        # A batch of one is recorded as one attempt, whose errors name the attempt's own fields.
        if exc.field and not exc.field.startswith("attempts") and len(models) == 1:
            raise item_error(exc, "attempts", 0, prefix_message=False) from None
        raise
    return BatchResult.of(namespace, results)


class MeasurementBatch(BaseModel):
    model_config = ConfigDict(extra="forbid")

    measurements: Annotated[
        list[dict[str, Any]],
        _records(
            MeasurementRecord,
            f"Up to {MAX_BATCH} MeasurementRecord objects: {{key, run_id, target, kernel, "
            "measurement, note}} with distinct `key`s; more is refused with 413.",
        ),
    ]


class MeasurementBatchResult(_Counted):
    results: list[MeasurementResult]


@router.post("/measurements/batch", responses=keyed(404, 409, body=True))
def record_measurements(
    batch: MeasurementBatch, knowledge: KnowledgeDep, namespace: WriteNamespace
) -> MeasurementBatchResult:
    """Record up to 1,000 kernels measured outside any attempt, in one transaction (all or none).

    For a measurement that has no partner to pair with (e.g. a published timing whose baseline was
    taken on another GPU). A bad record is reported as `measurements[i].<field>`; the same
    measurement recorded again comes back with `created: false` and writes nothing.
    """
    refuse_oversized(batch.measurements, "measurements")
    results = knowledge.record_measurements(
        namespace, validate_batch(MeasurementRecord, batch.measurements, "measurements")
    )
    return MeasurementBatchResult.of(namespace, results)
