"""The MCP tools through the SDK's in-process client session, on the real Neo4j."""

from __future__ import annotations

import json
from typing import Any

import anyio
import pytest
from mcp import Client

from kernelgraph.client import ExperienceClient
from kernelgraph.core.signature import SIGNATURE_DIM
from kernelgraph.service.inprocess import InProcessClient
from kernelgraph.service.knowledge import KnowledgeService
from kernelgraph.service.mcp import build_server
from kernelgraph.service.store import GraphStore
from tests import factories

pytestmark = pytest.mark.neo4j


class Recording(InProcessClient):
    """An in-process client that remembers being closed (the lifespan must close what it opened)."""

    closed = 0

    def close(self) -> None:
        Recording.closed += 1
        super().close()


def test_tools_round_trip_through_an_mcp_session(store: GraphStore, namespace: str) -> None:
    opened: list[ExperienceClient] = []

    def factory() -> ExperienceClient:
        client = Recording(KnowledgeService(store), namespace)
        opened.append(client)
        return client

    KnowledgeService(store).upsert_targets(namespace, [factories.target("cpu-a"), factories.target("cpu-b")])
    signature = [0.5] * SIGNATURE_DIM

    async def session() -> dict[str, Any]:
        out: dict[str, Any] = {}
        async with Client(build_server(factory)) as client:
            tools = {tool.name: tool for tool in (await client.list_tools()).tools}
            out["tools"] = tools
            for name in ("retrieve_transforms", "record_attempt", "transfer", "lineage"):
                out[name] = []
            attempt = factories.attempt("mcp:0", target_name="cpu-a", parent_signature=signature)
            for _ in range(2):
                out["record_attempt"].append(await client.call_tool("record_attempt", {"attempt": attempt}))
            out["retrieve_transforms"] = await client.call_tool(
                "retrieve_transforms", {"target": "cpu-a", "signature": signature}
            )
            child = out["record_attempt"][0].structured_content["child_kernel_id"]
            out["lineage"] = await client.call_tool("lineage", {"kernel_id": child})
            out["transfer"] = await client.call_tool(
                "transfer", {"source_target": "cpu-a", "destination_target": "cpu-b"}
            )
            out["list_targets"] = await client.call_tool("list_targets", {})
            out["bad"] = await client.call_tool("record_attempt", {"attempt": {**attempt, "speedup": -1}})
            out["missing"] = await client.call_tool("lineage", {"kernel_id": "0123abcd"})
            out["transfer_matrix"] = await client.call_tool("transfer_matrix", {})
            out["predict_transfer"] = await client.call_tool("predict_transfer", {"target": "cpu-b"})
            out["predict_unknown"] = await client.call_tool("predict_transfer", {"target": "nowhere"})
        return out

    out = anyio.run(session)
    assert len(opened) == 1 and Recording.closed >= 1  # one client for the whole server, closed at the end
    for name in ("retrieve_transforms", "record_attempt", "transfer", "transfer_matrix", "predict_transfer",
                 "lineage", "list_targets"):  # fmt: skip
        tool = out["tools"][name]
        assert tool.description and len(tool.description) > 200, name
    first, again = (r.structured_content for r in out["record_attempt"])
    assert first["created"] is True and again["created"] is False
    retrieved = out["retrieve_transforms"].structured_content
    assert [t["transform"] for t in retrieved["transforms"]] == ["unroll"]
    assert [s["transform"] for s in out["lineage"].structured_content["steps"]] == [None, "unroll"]
    assert out["transfer"].structured_content["source_target"] == "cpu-a"
    assert {t["name"] for t in out["list_targets"].structured_content["targets"]} == {"cpu-a", "cpu-b"}
    for result in (out["retrieve_transforms"], out["lineage"], out["transfer"], out["list_targets"]):
        assert not result.is_error
        json.dumps(result.structured_content)  # JSON-able all the way down
    assert out["bad"].is_error and "speedup" in out["bad"].content[0].text
    assert out["missing"].is_error and "not_found" in out["missing"].content[0].text
    # One target holds the only measured effect: no pair of targets to correlate; cpu-b's prediction
    # comes from cpu-a alone, and cpu-b measured nothing to compare it with.
    assert out["transfer_matrix"].structured_content["cells"] == []
    [predicted] = out["predict_transfer"].structured_content["predictions"]
    assert (predicted["transform"], predicted["sources"], predicted["measured_speedup"]) == (
        "unroll",
        1,
        None,
    )
    assert out["predict_unknown"].is_error and "not_found" in out["predict_unknown"].content[0].text
