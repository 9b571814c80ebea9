"""Hardware targets: registering them (peaks admin-only to change) and reading them, through a short cache."""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from typing import Any

from kernelgraph.core.errors import Forbidden, InvalidInput
from kernelgraph.core.models import HardwareTarget, validate
from kernelgraph.core.signature import TargetPeaks
from kernelgraph.service.recorder import SERVICE, Recorder
from kernelgraph.service.store import REQUEST_WRITE_TIMEOUT_S, GraphStore

log = logging.getLogger(__name__)

TARGET_CACHE_SECONDS = 5.0  # how long a replica reuses a target's stored facts (Targets.get)
PEAK_FIELDS = ("peak_gflops", "peak_gbps")  # a target's peaks: admin-only to change once stored


def peaks_of(target: dict[str, Any] | None) -> TargetPeaks:
    """The peaks and kind of a stored target (a missing target: a CPU with unknown peaks)."""
    target = target or {}
    return TargetPeaks(
        kind=target.get("kind", "cpu"),
        peak_gflops=target.get("peak_gflops"),
        peak_gbps=target.get("peak_gbps"),
        cores=target.get("cores"),
        isa=target.get("isa"),
    )


class Targets:
    """The stored targets of a service, and the cache every record and retrieve call reads them through."""

    def __init__(self, store: GraphStore) -> None:
        self.store = store
        # (namespaces, target name) -> (monotonic time read, target): see get()
        self._cache: dict[tuple[tuple[str, ...], str], tuple[float, dict[str, Any]]] = {}
        self.hits = self.misses = 0  # served at /metrics

    def upsert(
        self,
        namespace: str,
        targets: Sequence[HardwareTarget | dict[str, Any]],
        recorder: Recorder = SERVICE,
    ) -> list[str]:
        """Create or update hardware targets; returns their names.

        Changing the peaks of a stored target is admin-only (403 otherwise) and logged: the service
        checks every time recorded on the target against them.
        """
        models = [t if isinstance(t, HardwareTarget) else validate(HardwareTarget, t) for t in targets]
        names = [t.name for t in models]
        if len(set(names)) != len(names):
            duplicate = next(n for n in names if names.count(n) > 1)
            raise InvalidInput(
                f"target {duplicate!r} appears more than once in one request",
                field=f"targets[{len(names) - 1 - names[::-1].index(duplicate)}].name",
            )
        stored = self.store.read("targets_by_name", namespaces=[namespace], names=sorted(names))
        before = {row["target"]["name"]: row["target"] for row in stored}
        for index, model in enumerate(models):
            old = before.get(model.name)
            if old is None:
                continue
            for peak in PEAK_FIELDS:
                if old.get(peak) is not None and getattr(model, peak) != old.get(peak):
                    if not recorder.admin:
                        raise Forbidden(
                            f"changing the {peak} of stored target {model.name!r} ({old.get(peak)} -> "
                            f"{getattr(model, peak)}) needs an admin key",
                            field=f"targets[{index}].{peak}",
                        )
                    log.warning(
                        "target %s/%s: %s changed from %s to %s by key %s", namespace, model.name, peak,
                        old.get(peak), getattr(model, peak), recorder.key_id,
                    )  # fmt: skip
        rows: list[dict[str, Any]] = []
        for t in models:
            props = t.model_dump(mode="json", exclude={"name"}, exclude_none=True)
            old = before.get(t.name)
            if old is not None and any(props.get(p) != old.get(p) for p in PEAK_FIELDS):
                props["peaks_changed_by"] = recorder.key_id  # who, besides the log line above
            rows.append({"name": t.name, "props": props})
        names = [
            r["name"]
            for r in self.store.write(
                "upsert_targets", namespace=namespace, targets=rows, timeout_s=REQUEST_WRITE_TIMEOUT_S
            )
        ]
        self._cache.clear()
        return names

    def get(self, namespaces: Sequence[str], names: Sequence[str]) -> dict[str, dict[str, Any]]:
        """The stored targets of these names (an unknown name is left out).

        Every record and retrieve call needs its target's peaks; a found target is kept for
        TARGET_CACHE_SECONDS, saving a round trip per call. An unknown one is never cached (it is
        found as soon as it is registered); an update made through another replica shows within
        that time, one made through this one at once.
        """
        spaces = tuple(sorted(namespaces))
        now = time.monotonic()
        found: dict[str, dict[str, Any]] = {}
        missing: list[str] = []
        for name in set(names):
            hit = self._cache.get((spaces, name))
            if hit is not None and now - hit[0] < TARGET_CACHE_SECONDS:
                found[name] = hit[1]
            else:
                missing.append(name)
        self.hits += len(found)
        self.misses += len(missing)
        if missing:
            if len(self._cache) > 10_000:
                self._cache.clear()
            rows = self.store.read("targets_by_name", namespaces=list(spaces), names=sorted(missing))
            for row in rows:
                found[row["target"]["name"]] = row["target"]
                self._cache[(spaces, row["target"]["name"])] = (now, row["target"])
        return found

    def stored(self, namespaces: Sequence[str]) -> list[dict[str, Any]]:
        """Every target of these namespaces, with how many measurements and attempts it holds."""
        rows = self.store.read("list_targets", namespaces=list(namespaces))
        return [{**r["target"], "measurements": r["measurements"], "attempts": r["attempts"]} for r in rows]
