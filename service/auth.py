"""API keys: bearer tokens with a role and a namespace, stored hashed, looked up through a short cache.

A key is `secrets.token_urlsafe(32)` shown once to its owner; Neo4j holds only its sha256 (as
`(:ApiKey {key_hash, key_id, role, namespace, label, created_at})`). Readers and writers stay inside
their key's namespace; an admin may read (and write) any namespace it names explicitly.
"""

from __future__ import annotations

import hashlib
import re
import secrets
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from kernelgraph.core.errors import Forbidden, InvalidInput, NotFound, Unauthorized
from kernelgraph.core.models import Role
from kernelgraph.service.store import GraphStore

KEY_PREFIX = "kg_"
# How long a replica trusts a key it looked up: a revoked key stops working within this on every replica
# (at once on the replica that revoked it), for one key lookup per key per this many seconds.
CACHE_TTL_S = 5.0
_NAMESPACE = re.compile(r"^[a-z0-9][a-z0-9_\-]*$")


def hash_key(key: str) -> str:
    return hashlib.sha256(key.encode()).hexdigest()


def check_namespace(namespace: str, *, field: str = "namespace") -> str:
    if not (1 <= len(namespace) <= 64 and _NAMESPACE.match(namespace)):
        raise InvalidInput(
            f"{field}: a namespace is 1-64 lowercase letters, digits, '_' or '-', starting with a letter or digit",
            field=field,
        )
    return namespace


@dataclass(frozen=True)
class Principal:
    """Who is calling: the key's role and home namespace."""

    key_id: str
    role: Role
    namespace: str
    label: str = ""

    def readable(self, requested: Sequence[str] | None = None) -> list[str]:
        """Namespaces this caller reads: its own, or (admin only) the ones it names."""
        if not requested:
            return [self.namespace]
        wanted = [check_namespace(ns) for ns in requested]
        if self.role is not Role.ADMIN and any(ns != self.namespace for ns in wanted):
            raise Forbidden(
                f"a {self.role.value} key of namespace {self.namespace!r} cannot read another namespace",
                field="namespace",
            )
        return list(dict.fromkeys(wanted))

    def writable(self, requested: str | None = None) -> str:
        """The namespace this caller writes to; readers may not write at all."""
        if self.role is Role.READER:
            raise Forbidden("a reader key cannot write", field="authorization")
        if requested is None or requested == self.namespace:
            return self.namespace
        check_namespace(requested)
        if self.role is not Role.ADMIN:
            raise Forbidden(
                f"a writer key of namespace {self.namespace!r} cannot write to {requested!r}",
                field="namespace",
            )
        return requested


@dataclass(frozen=True)
class CreatedKey:
    """A new key: `key` is the secret, shown once; the rest is what `keys list` shows later."""

    key: str
    key_id: str
    role: Role
    namespace: str
    label: str
    created_at: str


def create_key(store: GraphStore, role: Role | str, namespace: str, label: str = "") -> CreatedKey:
    """Make a random key for `role` in `namespace`, store its hash, and return the key (shown once)."""
    try:
        role = Role(role)
    except ValueError:
        raise InvalidInput(f"role must be one of {[r.value for r in Role]}", field="role") from None
    check_namespace(namespace)
    if len(label) > 200:
        raise InvalidInput("label: at most 200 characters", field="label")
    key = KEY_PREFIX + secrets.token_urlsafe(32)
    key_hash = hash_key(key)
    row = store.write(
        "api_key_create",
        key_hash=key_hash,
        key_id=key_hash[:12],
        role=role.value,
        namespace=namespace,
        label=label,
    )[0]
    return CreatedKey(key=key, key_id=row["key_id"], role=role, namespace=namespace, label=label,
                      created_at=row["created_at"])  # fmt: skip


def revoke_key(store: GraphStore, key_id: str) -> dict[str, Any]:
    """Revoke the key `key_id` (kept, listed as revoked); NotFound when no key has that id."""
    rows = store.write("api_key_revoke", key_id=key_id)
    if not rows:
        raise NotFound(f"no API key has id {key_id!r} (see `kernelgraph keys list`)", field="key_id")
    return rows[0]


def list_keys(store: GraphStore) -> list[dict[str, Any]]:
    """Every key's public part (id, role, namespace, label, creation time); never the key or its hash."""
    return store.read("api_keys_list")


class KeyAuthenticator:
    """Turns a presented bearer key into a Principal; hits Neo4j at most once per key per `ttl_s`.

    Only known keys are cached, so a key created a moment ago works at once; a deleted or revoked key
    keeps working for at most `ttl_s` (not at all here once `forget_key` or `forget_namespace` ran).
    """

    def __init__(
        self, store: GraphStore, ttl_s: float = CACHE_TTL_S, clock: Callable[[], float] = time.monotonic
    ):
        self.store = store
        self.ttl_s = ttl_s
        self.clock = clock
        self._cache: dict[str, tuple[float, Principal]] = {}
        self._lock = threading.Lock()

    def forget_namespace(self, namespace: str) -> None:
        """Drop the cached keys of `namespace` (its keys were just deleted): they stop working at once here."""
        with self._lock:
            for key_hash in [h for h, (_, p) in self._cache.items() if p.namespace == namespace]:
                del self._cache[key_hash]

    def forget_key(self, key_id: str) -> None:
        """Drop the cached key `key_id` (it was just revoked): it stops working at once here."""
        with self._lock:
            for key_hash in [h for h, (_, p) in self._cache.items() if p.key_id == key_id]:
                del self._cache[key_hash]

    def authenticate(self, key: str | None) -> Principal:
        if not key:
            raise Unauthorized("missing API key: send `Authorization: Bearer <key>`", field="authorization")
        if len(key) > 512:
            raise Unauthorized("invalid API key", field="authorization")
        key_hash = hash_key(key)
        now = self.clock()
        with self._lock:
            cached = self._cache.get(key_hash)
        if cached is not None and cached[0] > now:
            return cached[1]
        rows = self.store.read("api_key_by_hash", key_hash=key_hash)
        if not rows:
            raise Unauthorized("invalid API key", field="authorization")
        row = rows[0]
        principal = Principal(key_id=row["key_id"], role=Role(row["role"]), namespace=row["namespace"],
                              label=row["label"] or "")  # fmt: skip
        with self._lock:
            if len(self._cache) > 10_000:  # bounded: drop everything rather than grow without limit
                self._cache.clear()
            self._cache[key_hash] = (now + self.ttl_s, principal)
        return principal
