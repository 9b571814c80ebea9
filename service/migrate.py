"""Schema migrations: schema/NNNN_*.cypher applied in order, each recorded as (:SchemaMigration)."""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from kernelgraph.core.models import finite_counters
from kernelgraph.core.signature import (
    SIGNATURE_DIM,
    SIGNATURE_VERSION,
    SIMILARITY_FUNCTION,
    CounterSource,
    compute_signature,
    source_dimensions,
    source_property,
)
from kernelgraph.service.consolidation import roll_up_merged_states
from kernelgraph.service.embeddings import EMBEDDING_DIM
from kernelgraph.service.queries import migrations
from kernelgraph.service.store import GraphStore, mapped_errors
from kernelgraph.service.targets import peaks_of

log = logging.getLogger(__name__)

# Values the migrations may reference as $parameters; they come from the one place that defines them.
SCHEMA_PARAMETERS = {
    "signature_dim": SIGNATURE_DIM,
    "signature_similarity": SIMILARITY_FUNCTION,
    "embedding_dim": EMBEDDING_DIM,
    **{f"dim_{source.value}": len(source_dimensions(source)) for source in CounterSource},
}
RESIGN_BATCH = 1_000


def resign_measurements(store: GraphStore) -> int:
    """Recompute every stored signature older than SIGNATURE_VERSION from the measurement's kept raw
    counters and its target's peaks (idempotent: re-signed measurements are not found again). The old
    vector is kept as `signature_v<its version>` (`signature_v1` from migration 0007, `signature_v2`
    from 0018, `signature_v3` from 0019); the per-source vectors written are the scaled ones
    (`Signature.source_vector`, signature 4 on); a signature a client gave without counters cannot be recomputed
    and keeps only what its counters measure. A measurement consolidation moved out of the vector
    indexes (merged or parked) stays out. Returns the number of measurements re-signed."""
    done = 0
    while True:
        rows = store.read("measurements_to_resign", version=SIGNATURE_VERSION, limit=RESIGN_BATCH)
        if not rows:
            return done
        updates = []
        for row in rows:
            try:
                counters = json.loads(row["counters_json"] or "{}")
            except ValueError:
                counters = {}
            numeric = {k: float(v) for k, v in counters.items() if isinstance(v, int | float)}
            signature = compute_signature(
                CounterSource(row["counter_source"]), finite_counters(numeric), peaks_of(row["target"])
            )
            props: dict[str, Any] = {source_property(s): None for s in CounterSource}
            # Only an explored state is in its source's vector index (Signature.stored).
            props.update(signature.stored(indexed=bool(row["explored"])))
            props[f"signature_v{row['version'] or 1}"] = row["signature"]
            if row.get("held_as"):
                # Consolidation took this one out of the vector indexes (merged into another state, or
                # no attempt started from it): the new signature stays where it put the old one.
                props.update({row["held_as"]: props["signature"], "signature": None})
                props.update({source_property(s): None for s in CounterSource})
            updates.append(
                {"namespace": row["namespace"], "measurement_id": row["measurement_id"], "props": props}
            )
        store.write("set_measurement_signatures", rows=updates)
        done += len(updates)
        log.info("re-signed %d measurements (signature version %d)", done, SIGNATURE_VERSION)


# Data steps that run after a migration's statements (which cannot hold Python): version -> step.
DATA_STEPS: dict[int, Callable[[GraphStore], int]] = {
    7: resign_measurements,
    10: roll_up_merged_states,
    18: resign_measurements,
    19: resign_measurements,
}


@dataclass(frozen=True)
class MigrationState:
    version: int
    name: str
    applied: bool


def _version(name: str) -> int:
    return int(name.split("_", 1)[0])


def status(store: GraphStore) -> list[MigrationState]:
    applied = {row["version"] for row in store.read("schema_migrations_applied")}
    return [MigrationState(_version(m.name), m.name, _version(m.name) in applied) for m in migrations()]


def apply(store: GraphStore) -> list[MigrationState]:
    """Apply pending migrations in order; applying twice changes nothing. Returns those applied now."""
    applied_now = []
    for state in status(store):
        if state.applied:
            continue
        migration = next(m for m in migrations() if m.name == state.name)
        for statement in migration.statements():
            params = {k: v for k, v in SCHEMA_PARAMETERS.items() if f"${k}" in statement}
            # Schema statements cannot share a transaction with data writes: each runs on its own.
            with mapped_errors():
                if "IN TRANSACTIONS" in statement:
                    # A backfill that commits in batches needs an auto-commit transaction.
                    with store.driver.session(database=store.database) as session:
                        session.run(statement, params).consume()
                else:
                    store.driver.execute_query(statement, params, database_=store.database)
        with mapped_errors():
            store.driver.execute_query("CALL db.awaitIndexes(300)", database_=store.database)
        step = DATA_STEPS.get(state.version)
        if step is not None:
            step(store)
            with mapped_errors():
                store.driver.execute_query("CALL db.awaitIndexes(300)", database_=store.database)
        store.write("schema_migration_record", version=state.version, name=state.name)
        log.info("applied schema migration %s", state.name)
        applied_now.append(MigrationState(state.version, state.name, True))
    return applied_now
