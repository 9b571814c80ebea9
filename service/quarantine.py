"""Quarantine: taking one API key's evidence out of retrieval and consolidation, and giving it back."""

from __future__ import annotations

import logging
from typing import Any

from kernelgraph.core.errors import InvalidInput
from kernelgraph.service.store import REQUEST_WRITE_TIMEOUT_S, GraphStore

log = logging.getLogger(__name__)


def quarantine(
    store: GraphStore, namespace: str, key_id: str, *, apply: bool = False, release: bool = False
) -> dict[str, Any]:
    """Quarantine (`release`: un-quarantine) the evidence key `key_id` recorded in `namespace`.

    Without `apply`, a dry run: counts what would change and changes nothing. Quarantined evidence
    stays stored, is left out of retrieval and consolidation, and comes back on release.
    """
    if not key_id or len(key_id) > 128:
        raise InvalidInput("key_id: a key id as `kernelgraph keys list` shows it", field="key_id")
    row = store.write(
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
