"""The client API straight on KnowledgeService, for agents that run without a service (no HTTP hop).

`kernelgraph.client.connect` finds `connect_in_process` through the `kernelgraph.clients` entry point,
so the client package never imports the server.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from neo4j import Driver

from kernelgraph.client.http import AttemptLike, MeasurementLike, TargetLike
from kernelgraph.core.batches import in_batches
from kernelgraph.core.models import (
    LineageStep,
    MeasurementResult,
    RecordResult,
    RetrieveRequest,
    RetrieveResponse,
    TransferMatrixRequest,
    TransferMatrixResponse,
    TransferPrediction,
    TransferPredictRequest,
    TransferResponse,
    validate,
)
from kernelgraph.core.settings import Settings
from kernelgraph.service.knowledge import KnowledgeService
from kernelgraph.service.recorder import SERVICE, Recorder


class InProcessClient:
    """The same client API straight on KernelService, for agents that run without a service.

    `owned_driver`, when given, is closed by `close()` (what `connect()` passes). `recorder` is who
    its writes are recorded as: the service's own process (verified) unless the caller relays claims
    it did not measure (the MCP server does: `relaying`).
    """

    def __init__(
        self,
        knowledge: KnowledgeService,
        namespace: str,
        *,
        owned_driver: Driver | None = None,
        recorder: Recorder = SERVICE,
    ) -> None:
        self.knowledge = knowledge
        self.namespace = namespace
        self._owned_driver = owned_driver
        self.recorder = recorder

    def relaying(self, key_id: str) -> InProcessClient:
        """This client recording as the unverified key `key_id`: for writes it relays, not measures."""
        self.recorder = Recorder(key_id)
        return self

    def upsert_targets(self, targets: Sequence[TargetLike]) -> list[str]:
        return self.knowledge.upsert_targets(self.namespace, list(targets), self.recorder)

    def record_attempts(self, attempts: Sequence[AttemptLike]) -> list[RecordResult]:
        return in_batches(
            list(attempts),
            lambda batch: self.knowledge.record_attempts(self.namespace, batch, self.recorder),
        )

    def record_attempt(self, attempt: AttemptLike) -> RecordResult:
        return self.knowledge.record_attempts(self.namespace, [attempt], self.recorder)[0]

    def record_measurements(self, records: Sequence[MeasurementLike]) -> list[MeasurementResult]:
        return in_batches(
            list(records), lambda batch: self.knowledge.record_measurements(self.namespace, batch)
        )

    def retrieve(self, request: RetrieveRequest | dict[str, Any]) -> RetrieveResponse:
        req = request if isinstance(request, RetrieveRequest) else validate(RetrieveRequest, request)
        return self.knowledge.retrieve([self.namespace], req, self.recorder)

    def transfer(self, source: str, destination: str, pattern: str | None = None) -> TransferResponse:
        return self.knowledge.transfer([self.namespace], source, destination, pattern)

    def transfer_matrix(self, transform: str | None = None, resamples: int = 1_000) -> TransferMatrixResponse:
        request = validate(TransferMatrixRequest, {"transform": transform, "resamples": resamples})
        return self.knowledge.transfer_matrix([self.namespace], request.transform, request.resamples)

    def predict_transfer(self, target: str, transform: str | None = None) -> TransferPrediction:
        request = validate(TransferPredictRequest, {"target": target, "transform": transform})
        return self.knowledge.predict_transfer([self.namespace], request.target, request.transform)

    def lineage(self, kernel_id: str) -> list[LineageStep]:
        return self.knowledge.lineage([self.namespace], kernel_id)

    def list_targets(self) -> list[dict[str, Any]]:
        return self.knowledge.list_targets([self.namespace])

    def list_transforms(self) -> list[dict[str, Any]]:
        return self.knowledge.list_transforms([self.namespace])

    def evidence(self, attempt_keys: Sequence[str]) -> list[dict[str, Any]]:
        """The attempts behind retrieved evidence, in full (as `KernelGraphClient.evidence`)."""
        return self.knowledge.evidence([self.namespace], list(attempt_keys))

    def vocabulary(self) -> dict[str, Any]:
        """The names to choose from (as `KernelGraphClient.vocabulary`, GET /v1/vocabulary)."""
        from kernelgraph.service.vocabulary import vocabulary

        return vocabulary(self.knowledge.list_transforms([self.namespace]))

    def close(self) -> None:
        if self._owned_driver is not None:
            self._owned_driver.close()
            self._owned_driver = None

    def __enter__(self) -> InProcessClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def connect_in_process(settings: Settings) -> InProcessClient:
    """An in-process client on the Neo4j of `settings`; it owns, and closes, its driver."""
    from kernelgraph.service.embeddings import MiniLMEmbedder
    from kernelgraph.service.store import GraphStore, open_driver

    driver = open_driver(settings)
    try:
        knowledge = KnowledgeService(GraphStore(driver, settings.neo4j_database), MiniLMEmbedder())
    except BaseException:
        driver.close()
        raise
    return InProcessClient(knowledge, settings.namespace, owned_driver=driver)
