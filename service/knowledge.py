"""The use cases of the experience graph behind one facade: what the API, the MCP server and the
in-process client call.

No HTTP or MCP in here, and no use case either: each lives in its own module and this class hands
every call to it. Every method takes the namespaces the caller may see; isolation between teams is
enforced in the use cases.

- targets and their cache: service/targets.py
- recording attempts and measurements (rows, parents, the transaction body): service/recording.py,
  committed in groups by service/writer.py
- retrieval (exact and index search, over-fetch, embeddings): service/retrieval.py
- transfer between targets: service/transfer_queries.py (the maths: service/transfer.py)
- lineage, evidence, leaderboards: service/lineage.py
- quarantine: service/quarantine.py; consolidation: service/consolidation.py
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from kernelgraph.core.models import (
    AttemptRecord,
    HardwareTarget,
    KernelVariant,
    LineageStep,
    Measurement,
    MeasurementRecord,
    MeasurementResult,
    RecordResult,
    RetrieveRequest,
    RetrieveResponse,
    TransferMatrixResponse,
    TransferPrediction,
    TransferResponse,
)
from kernelgraph.service import lineage as readback
from kernelgraph.service.consolidation import ConsolidationReport, consolidate
from kernelgraph.service.embeddings import Embedder
from kernelgraph.service.quarantine import quarantine as quarantine_key
from kernelgraph.service.recorder import SERVICE, Recorder
from kernelgraph.service.recording import Recording, measurement_row
from kernelgraph.service.retrieval import Retrieval
from kernelgraph.service.store import GraphStore
from kernelgraph.service.targets import Targets
from kernelgraph.service.transfer import EffectKey, TargetFacts
from kernelgraph.service.transfer_queries import TransferQueries
from kernelgraph.service.writer import GroupCommitWriter, WriteJob


class KnowledgeService:
    def __init__(self, store: GraphStore, embedder: Embedder | None = None) -> None:
        self.store = store
        self.target_registry = Targets(store)
        self.recording = Recording(store, self.target_registry)
        self.retrieval = Retrieval(store, self.target_registry, embedder)
        self.transfers = TransferQueries(store, self.target_registry)

    # ---- targets (service/targets.py) --------------------------------------------------------------
    def upsert_targets(
        self,
        namespace: str,
        targets: Sequence[HardwareTarget | dict[str, Any]],
        recorder: Recorder = SERVICE,
    ) -> list[str]:
        return self.target_registry.upsert(namespace, targets, recorder)

    def targets(self, namespaces: Sequence[str], names: Sequence[str]) -> dict[str, dict[str, Any]]:
        return self.target_registry.get(namespaces, names)

    def list_targets(self, namespaces: Sequence[str]) -> list[dict[str, Any]]:
        return self.target_registry.stored(namespaces)

    @property
    def target_cache_hits(self) -> int:  # served at /metrics
        return self.target_registry.hits

    @property
    def target_cache_misses(self) -> int:
        return self.target_registry.misses

    # ---- recording (service/recording.py) ----------------------------------------------------------
    def record_attempts(
        self,
        namespace: str,
        attempts: Sequence[AttemptRecord | dict[str, Any]],
        recorder: Recorder = SERVICE,
    ) -> list[RecordResult]:
        return self.recording.record_attempts(namespace, attempts, recorder)

    def record_measurements(
        self, namespace: str, records: Sequence[MeasurementRecord | dict[str, Any]]
    ) -> list[MeasurementResult]:
        return self.recording.record_measurements(namespace, records)

    @property
    def writer(self) -> GroupCommitWriter:
        """The group-commit writer attempts are recorded through (tests replace it to pin its slots)."""
        return self.recording.writer

    @writer.setter
    def writer(self, writer: GroupCommitWriter) -> None:
        self.recording.writer = writer

    def _write_attempt_jobs(self, jobs: Sequence[WriteJob]) -> list[dict[str, bool] | Exception]:
        return self.recording.write_attempt_jobs(jobs)

    def _measurement_row(
        self, measurement: Measurement, kernel: KernelVariant, target: dict[str, Any]
    ) -> dict[str, Any]:
        return measurement_row(measurement, kernel, target)

    # ---- operators: quarantine (service/quarantine.py), consolidation (service/consolidation.py) -----
    def quarantine(
        self, namespace: str, key_id: str, *, apply: bool = False, release: bool = False
    ) -> dict[str, Any]:
        return quarantine_key(self.store, namespace, key_id, apply=apply, release=release)

    def consolidate(self, namespace: str, *, dry_run: bool = False) -> ConsolidationReport:
        """Merge re-measured states, weigh superseded versions, flag contradictions (service/consolidation.py)."""
        return consolidate(self.store, namespace, dry_run=dry_run)

    # ---- retrieval (service/retrieval.py) ----------------------------------------------------------
    def retrieve(
        self, namespaces: Sequence[str], request: RetrieveRequest | dict[str, Any], reader: Recorder = SERVICE
    ) -> RetrieveResponse:
        return self.retrieval.retrieve(namespaces, request, reader)

    def embed_pending(self, namespaces: Sequence[str], batch: int = 256) -> int:
        return self.retrieval.embed_pending(namespaces, batch)

    # ---- transfer (service/transfer_queries.py) ----------------------------------------------------
    def transfer(
        self, namespaces: Sequence[str], source: str, destination: str, pattern: str | None = None
    ) -> TransferResponse:
        return self.transfers.transfer(namespaces, source, destination, pattern)

    def transfer_data(
        self, namespaces: Sequence[str], transform: str | None = None
    ) -> tuple[list[TargetFacts], dict[str, dict[EffectKey, float]], dict[EffectKey, str]]:
        return self.transfers.transfer_data(namespaces, transform)

    def transfer_matrix(
        self, namespaces: Sequence[str], transform: str | None = None, resamples: int = 1_000
    ) -> TransferMatrixResponse:
        return self.transfers.transfer_matrix(namespaces, transform, resamples)

    def predict_transfer(
        self, namespaces: Sequence[str], target: str, transform: str | None = None
    ) -> TransferPrediction:
        return self.transfers.predict_transfer(namespaces, target, transform)

    # ---- lineage, evidence, leaderboards (service/lineage.py) --------------------------------------
    def lineage(self, namespaces: Sequence[str], kernel_id: str, max_depth: int = 50) -> list[LineageStep]:
        return readback.lineage(self.store, namespaces, kernel_id, max_depth)

    def evidence(self, namespaces: Sequence[str], attempt_keys: Sequence[str]) -> list[dict[str, Any]]:
        return readback.evidence(self.store, namespaces, attempt_keys)

    def leaderboard(
        self,
        namespaces: Sequence[str],
        pattern: str | None = None,
        target: str | None = None,
        limit: int = 100,
    ) -> list[dict[str, Any]]:
        return readback.leaderboard(self.store, namespaces, pattern, target, limit)

    def list_transforms(self, namespaces: Sequence[str]) -> list[dict[str, Any]]:
        return readback.list_transforms(self.store, namespaces)
