"""The HTTP client of the knowledge service, and `ExperienceClient`, what every client offers an agent.

Returns `kernelgraph.core.models` objects and raises `kernelgraph.core.errors`; needs only httpx
and pydantic (the in-process client lives with the service: `kernelgraph.service.inprocess`).
"""

from __future__ import annotations

import logging
import random
import time
from collections.abc import Callable, Sequence
from typing import Any, Protocol, TypeVar, runtime_checkable

import httpx
from pydantic import BaseModel

from kernelgraph.core import errors
from kernelgraph.core.batches import in_batches
from kernelgraph.core.errors import KernelGraphError, Retryable
from kernelgraph.core.models import (
    AttemptRecord,
    HardwareTarget,
    LineageStep,
    MeasurementRecord,
    MeasurementResult,
    RecordResult,
    RetrieveRequest,
    RetrieveResponse,
    TransferMatrixResponse,
    TransferPrediction,
    TransferResponse,
)

log = logging.getLogger(__name__)
M = TypeVar("M", bound=BaseModel)

AttemptLike = AttemptRecord | dict[str, Any]
TargetLike = HardwareTarget | dict[str, Any]
MeasurementLike = MeasurementRecord | dict[str, Any]


@runtime_checkable
class ExperienceClient(Protocol):
    """What an agent needs from the experience graph, however it is reached."""

    def upsert_targets(self, targets: Sequence[TargetLike]) -> list[str]: ...

    def record_attempts(self, attempts: Sequence[AttemptLike]) -> list[RecordResult]: ...

    def record_attempt(self, attempt: AttemptLike) -> RecordResult: ...

    def record_measurements(self, records: Sequence[MeasurementLike]) -> list[MeasurementResult]: ...

    def retrieve(self, request: RetrieveRequest | dict[str, Any]) -> RetrieveResponse: ...

    def transfer(self, source: str, destination: str, pattern: str | None = None) -> TransferResponse: ...

    def transfer_matrix(
        self, transform: str | None = None, resamples: int = 1_000
    ) -> TransferMatrixResponse: ...

    def predict_transfer(self, target: str, transform: str | None = None) -> TransferPrediction: ...

    def lineage(self, kernel_id: str) -> list[LineageStep]: ...

    def list_targets(self) -> list[dict[str, Any]]: ...

    def close(self) -> None: ...


def _error_classes() -> dict[str, type[KernelGraphError]]:
    classes: dict[str, type[KernelGraphError]] = {}
    pending: list[type[KernelGraphError]] = [KernelGraphError]
    while pending:
        cls = pending.pop()
        classes.setdefault(cls.code, cls)
        pending.extend(cls.__subclasses__())
    return classes


_BY_STATUS: dict[int, type[KernelGraphError]] = {
    400: errors.InvalidInput,
    401: errors.Unauthorized,
    403: errors.Forbidden,
    404: errors.NotFound,
    409: errors.Conflict,
    413: errors.PayloadTooLarge,
    415: errors.UnsupportedMediaType,
    422: errors.InvalidInput,
    429: errors.RateLimited,
    503: errors.Retryable,
}


def error_from_response(response: httpx.Response) -> KernelGraphError:
    """The service's error as the matching `kernelgraph.core.errors` class (by its code, else by status)."""
    try:
        body = response.json()["error"]
        code, message = str(body["code"]), str(body["message"])
        field, details = body.get("field"), body.get("details")
    except (ValueError, KeyError, TypeError):
        code, message, field, details = "", response.text[:500] or response.reason_phrase, None, None
    cls = _error_classes().get(code) or _BY_STATUS.get(response.status_code, KernelGraphError)
    error = cls(message, field=field, details=details)
    if cls is KernelGraphError:
        error.status_code = response.status_code
    return error


class KernelGraphClient:
    """The HTTP client of the knowledge service.

    429s, 503s and connection failures are retried with exponential backoff (honouring `Retry-After`, capped
    at `max_backoff_s`) up to `max_retries` times; every call is safe to retry because writes are
    idempotent on their natural keys. Other errors raise at once as `kernelgraph.core.errors` classes.
    """

    def __init__(
        self,
        base_url: str,
        api_key: str | None,
        timeout: float = 30.0,
        *,
        namespace: str | None = None,
        max_retries: int = 4,
        backoff_s: float = 0.5,
        max_backoff_s: float = 10.0,
        transport: httpx.BaseTransport | None = None,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        if namespace:
            headers["X-KernelGraph-Namespace"] = namespace
        self._http = httpx.Client(base_url=base_url.rstrip("/"), timeout=timeout, headers=headers,
                                  transport=transport)  # fmt: skip
        self.max_retries = max_retries
        self.backoff_s = backoff_s
        self.max_backoff_s = max_backoff_s
        self._sleep = sleep

    # ---- transport --------------------------------------------------------------------------------
    def _delay(self, attempt: int, response: httpx.Response | None) -> float:
        if response is not None:
            header = response.headers.get("Retry-After", "")
            if header.isdigit():
                return min(float(header), self.max_backoff_s)
        return min(self.backoff_s * 2**attempt, self.max_backoff_s) * (0.5 + random.random() / 2)

    def _request(
        self, method: str, path: str, *, json: Any = None, params: dict[str, Any] | None = None
    ) -> Any:
        for attempt in range(self.max_retries + 1):
            last = attempt == self.max_retries
            try:
                response = self._http.request(method, path, json=json, params=params)
            except httpx.TransportError as exc:
                if last:
                    raise Retryable(
                        f"KernelGraph service unreachable at {self._http.base_url}: {exc}"
                    ) from exc
                delay = self._delay(attempt, None)
                log.warning("%s %s failed (%s); retrying in %.1fs", method, path, type(exc).__name__, delay)
                self._sleep(delay)
                continue
            if response.status_code in (429, 503) and not last:
                delay = self._delay(attempt, response)
                log.warning("%s %s: %s; retrying in %.1fs", method, path,
                            "rate limited" if response.status_code == 429 else "service unavailable", delay)  # fmt: skip
                self._sleep(delay)
                continue
            if response.is_success:
                return response.json()
            raise error_from_response(response)
        raise AssertionError("unreachable")  # pragma: no cover

    # ---- ExperienceClient ---------------------------------------------------------------------------
    def upsert_targets(self, targets: Sequence[TargetLike]) -> list[str]:
        body = {"targets": [_dump(t) for t in targets]}
        return list(self._request("POST", "/v1/targets", json=body)["names"])

    def _post_batch(self, path: str, key: str, batch: Sequence[dict[str, Any]], model: type[M]) -> list[M]:
        reply = self._request("POST", path, json={key: list(batch)})
        return [model.model_validate(r) for r in reply["results"]]

    def record_attempts(self, attempts: Sequence[AttemptLike]) -> list[RecordResult]:
        """Record attempts, in batches of at most MAX_BATCH (each batch is all-or-nothing)."""
        return in_batches(
            [_dump(a) for a in attempts],
            lambda batch: self._post_batch("/v1/attempts/batch", "attempts", batch, RecordResult),
        )

    def record_attempt(self, attempt: AttemptLike) -> RecordResult:
        return RecordResult.model_validate(self._request("POST", "/v1/attempts", json=_dump(attempt)))

    def record_measurements(self, records: Sequence[MeasurementLike]) -> list[MeasurementResult]:
        """Record measurements outside attempts, in batches of at most MAX_BATCH (each all-or-nothing)."""
        return in_batches(
            [_dump(r) for r in records],
            lambda batch: self._post_batch(
                "/v1/measurements/batch", "measurements", batch, MeasurementResult
            ),
        )

    def retrieve(self, request: RetrieveRequest | dict[str, Any]) -> RetrieveResponse:
        reply = self._request("POST", "/v1/retrieve", json=_dump(request))
        return RetrieveResponse.model_validate(reply)

    def transfer(self, source: str, destination: str, pattern: str | None = None) -> TransferResponse:
        body = {"source_target": source, "destination_target": destination, "pattern": pattern}
        return TransferResponse.model_validate(self._request("POST", "/v1/transfer", json=body))

    def transfer_matrix(self, transform: str | None = None, resamples: int = 1_000) -> TransferMatrixResponse:
        body = {"transform": transform, "resamples": resamples}
        return TransferMatrixResponse.model_validate(self._request("POST", "/v1/transfer/matrix", json=body))

    def predict_transfer(self, target: str, transform: str | None = None) -> TransferPrediction:
        body = {"target": target, "transform": transform}
        return TransferPrediction.model_validate(self._request("POST", "/v1/transfer/predict", json=body))

    def lineage(self, kernel_id: str) -> list[LineageStep]:
        reply = self._request("GET", f"/v1/kernels/{kernel_id}/lineage")
        return [LineageStep.model_validate(step) for step in reply["steps"]]

    def list_targets(self) -> list[dict[str, Any]]:
        return list(self._request("GET", "/v1/targets")["targets"])

    def list_transforms(self) -> list[dict[str, Any]]:
        return list(self._request("GET", "/v1/transforms")["transforms"])

    def evidence(self, attempt_keys: Sequence[str]) -> list[dict[str, Any]]:
        """The attempts behind retrieved evidence (a transform's `evidence_attempt_keys`), in full: who
        recorded each (`agent`, `run_id`), when (`created_at`), its task, transform, outcome and speedup.
        Keys not stored in the key's namespaces are left out; at most 200 keys per call."""
        body = {"attempt_keys": list(attempt_keys)}
        return list(self._request("POST", "/v1/evidence", json=body)["attempts"])

    def vocabulary(self) -> dict[str, Any]:
        """The names to choose from: transforms, tasks, patterns, backends, counters (GET /v1/vocabulary)."""
        result: dict[str, Any] = self._request("GET", "/v1/vocabulary")
        return result

    def health(self) -> dict[str, Any]:
        result: dict[str, Any] = self._request("GET", "/v1/health")
        return result

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> KernelGraphClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _dump(value: BaseModel | dict[str, Any]) -> dict[str, Any]:
    """JSON-ready dict; a model instance is dumped as-is (so a retry resends identical content)."""
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json", exclude_none=True)
    return value
