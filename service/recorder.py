"""Who records or retrieves evidence: an API key, and what it is trusted with."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Recorder:
    """Who records or retrieves: an API key's id, and whether its evidence is `verified` (the service's
    own evaluator, in process, or a key of role verifier), and whether it may change stored peaks (admin)."""

    key_id: str
    verified: bool = False
    admin: bool = False


# The service's own process (the in-process client, the demo, imports an operator runs): trusted.
SERVICE = Recorder("service", verified=True, admin=True)
