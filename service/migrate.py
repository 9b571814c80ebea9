"""Schema migrations: schema/NNNN_*.cypher applied in order, each recorded as (:SchemaMigration)."""

from __future__ import annotations

import logging
from dataclasses import dataclass

from kernelgraph.client.signature import SIGNATURE_DIM, SIMILARITY_FUNCTION
from kernelgraph.service.embeddings import EMBEDDING_DIM
from kernelgraph.service.queries import migrations
from kernelgraph.service.store import GraphStore, mapped_errors

log = logging.getLogger(__name__)

# Values the migrations may reference as $parameters; they come from the one place that defines them.
SCHEMA_PARAMETERS = {
    "signature_dim": SIGNATURE_DIM,
    "signature_similarity": SIMILARITY_FUNCTION,
    "embedding_dim": EMBEDDING_DIM,
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
        store.write("schema_migration_record", version=state.version, name=state.name)
        log.info("applied schema migration %s", state.name)
        applied_now.append(MigrationState(state.version, state.name, True))
    return applied_now
