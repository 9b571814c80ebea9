"""The vocabulary an agent chooses its labels from (`GET /v1/vocabulary`, the MCP tool `vocabulary`).

The transforms with what each does, the tasks, access patterns, families and backends come from the
agent's shipped vocabulary (agent/vocabulary.py), found through the `kernelgraph.vocabulary` entry
point so that the service never imports the agent; without it (a service-only install) those lists
are the names the graph holds. The counter sources, what each can fill and the counter names each
reads come from the client's signature (core/signature.py, core/ncu.py).
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import cache
from importlib.metadata import distributions
from typing import Any

from kernelgraph.core.models import Outcome, RetrievalMode
from kernelgraph.core.ncu import counter_names, dimension_reads
from kernelgraph.core.signature import DIMENSIONS, SIGNATURE_VERSION, CounterSource

VOCABULARY_ENTRY_POINT = ("kernelgraph.vocabulary", "shipped")


@cache
def shipped() -> dict[str, Any] | None:
    """The agent's vocabulary, or None when the agent is not installed."""
    group, name = VOCABULARY_ENTRY_POINT
    # Every distribution's metadata, not only the first of each name: a stale kernelgraph.egg-info in
    # the working directory (left by a source build) would otherwise hide the installed entry point.
    found = [
        ep for dist in distributions() for ep in dist.entry_points if (ep.group, ep.name) == (group, name)
    ]
    try:
        factory = found[0].load()
    except (IndexError, ModuleNotFoundError):
        return None
    vocabulary: dict[str, Any] = factory()
    return vocabulary


def counter_sources() -> dict[str, Any]:
    """Per counter source: the dimensions it fills (and from which counters), those it cannot fill,
    and every counter name the signature reads from it (Nsight Compute's raw names included)."""
    out: dict[str, Any] = {}
    for source in CounterSource:
        reads = dimension_reads(source)
        out[source.value] = {
            "fills": reads,
            "cannot_fill": [d.name for d in DIMENSIONS if d.name not in reads],
            "counters": counter_names(source),
        }
    return out


def vocabulary(recorded_transforms: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """The whole vocabulary; `recorded_transforms` (KnowledgeService.list_transforms) adds how often
    each transform was tried and kept in the caller's namespaces, and the names only the graph holds."""
    agent = shipped() or {}
    record = {row["transform"]: row for row in recorded_transforms}
    transforms = [
        {**t, "attempts": record.get(t["name"], {}).get("attempts", 0), "kept": record.get(t["name"], {}).get("kept", 0)}
        for t in agent.get("transforms", [])
    ]  # fmt: skip
    known = {t["name"] for t in transforms}
    transforms += [
        {"name": name, "description": None, "attempts": row["attempts"], "kept": row["kept"]}
        for name, row in sorted(record.items()) if name not in known
    ]  # fmt: skip
    return {
        "shipped": bool(agent),
        "transforms": transforms,
        "tasks": agent.get("tasks", []),
        "patterns": agent.get("patterns", []),
        "families": agent.get("families", []),
        "backends": agent.get("backends", []),
        "counter_sources": counter_sources(),
        "signature": {"version": SIGNATURE_VERSION,
                      "dimensions": [{"name": d.name, "meaning": d.meaning} for d in DIMENSIONS]},
        "outcomes": [o.value for o in Outcome],
        "retrieval_modes": [m.value for m in RetrievalMode],
    }  # fmt: skip
