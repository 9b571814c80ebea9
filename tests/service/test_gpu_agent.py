"""An agent we did not write, measuring with Nsight Compute: its raw metric names and exports are
read, the retrieve answer explains an empty result, docs/api.md's worked example runs as it is, and
the MCP tools let an MCP-only agent register, record (flat arguments), retrieve and read evidence."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client

from kernelgraph.core.ncu import (
    NcuFormatError,
    coverage_markdown,
    ncu_metrics_markdown,
    parse_ncu_csv,
    parse_ncu_json,
)
from kernelgraph.core.signature import DIMENSION_NAMES, TargetPeaks, compute_signature
from kernelgraph.service.inprocess import InProcessClient
from kernelgraph.service.knowledge import KnowledgeService
from kernelgraph.service.mcp import build_server
from kernelgraph.service.store import GraphStore
from tests import factories
from tests.service.conftest import Keys, bearer

REPO = Path(__file__).resolve().parents[2]
FIXTURES = REPO / "tests" / "fixtures" / "ncu"
H100 = TargetPeaks("cuda", 67000.0, 3350.0)
FIVE = ("sm__throughput.avg.pct_of_peak_sustained_elapsed", "dram__throughput.avg.pct_of_peak_sustained_elapsed",
        "l1tex__t_sector_hit_rate.pct", "lts__t_sector_hit_rate.pct",
        "sm__warps_active.avg.pct_of_peak_sustained_active")  # fmt: skip


def test_both_csv_pages_read_in_base_units() -> None:
    details = parse_ncu_csv((FIXTURES / "softmax_details.csv").read_text())
    raw = parse_ncu_csv((FIXTURES / "softmax_raw.csv").read_text())
    assert details["gpu__time_duration.sum"] == pytest.approx(12_510.0)  # usecond -> ns
    assert details["dram__bytes.sum"] == pytest.approx(33.56e6)  # Mbyte -> bytes
    assert details["smsp__sass_thread_inst_executed_op_fadd_pred_on.sum"] == 8_388_608  # thousands separators
    assert raw["gpu__time_duration.sum"] == pytest.approx(12_500.0)  # the mean of two kernels
    assert raw["lts__t_sector_hit_rate.pct"] == pytest.approx(48.5)
    as_json = parse_ncu_json(
        '[{"Metric Name": "gpu__time_duration.sum", "Metric Unit": "msecond", "Metric Value": "1.5"}]'
    )
    assert as_json == {"gpu__time_duration.sum": pytest.approx(1.5e6)}
    assert parse_ncu_json('{"lts__t_sector_hit_rate.pct": 50}') == {"lts__t_sector_hit_rate.pct": 50.0}
    with pytest.raises(NcuFormatError, match="Metric Name"):
        parse_ncu_csv("a,b\n1,2\n")


def test_raw_metric_names_fill_the_dimensions_ncu_can_fill() -> None:
    counters = parse_ncu_csv((FIXTURES / "softmax_details.csv").read_text())
    signature = compute_signature("nvidia_ncu", counters, H100).as_dict()
    flops = 8_388_608 * 2 + 4_194_304 * 2
    assert signature["compute_fraction"] == pytest.approx(flops / 12_510.0 / 67000.0, rel=1e-4)
    assert signature["memory_fraction"] == pytest.approx(0.8412)  # ncu's own fraction of peak
    assert signature["llc_miss_rate"] == pytest.approx(1 - 0.4875)
    assert signature["register_pressure"] == pytest.approx(32 / 255, rel=1e-4)
    assert signature["ridge_position"] is None and signature["spill_pressure"] is None
    five = compute_signature("nvidia_ncu", {m: counters[m] for m in FIVE}, H100).as_dict()
    assert five["compute_fraction"] is None and five["launch_overhead_share"] is None


def test_the_docs_tables_are_the_code_s() -> None:
    text = (REPO / "docs" / "api.md").read_text()
    assert coverage_markdown() in text and ncu_metrics_markdown() in text


def record_on_gpu(store: GraphStore, namespace: str, key: str, **attempt: Any) -> dict[str, float]:
    """A registered H100-like target and one attempt from the state the details-page export measured;
    returns that export's counters."""
    knowledge = KnowledgeService(store)
    knowledge.upsert_targets(namespace, [factories.target("gpu", kind="cuda", arch="sm90", peak_gflops=67000.0,
                                                          peak_gbps=3350.0, cores=None, isa=None)])  # fmt: skip
    naive = parse_ncu_csv((FIXTURES / "softmax_details.csv").read_text())
    parent = {
        "median_ns": 12_510.0,
        "trials": 20,
        "correct": True,
        "counter_source": "nvidia_ncu",
        "counters": naive,
    }
    knowledge.record_attempts(
        namespace, [factories.attempt(key, target_name="gpu", parent_measurement=parent, **attempt)]
    )
    return naive


def test_an_empty_retrieval_explains_itself(store: GraphStore, namespace: str) -> None:
    knowledge = KnowledgeService(store)
    naive = record_on_gpu(store, namespace, "r:0", child_measurement=None, outcome="crashed", speedup=None)
    five = {m: naive[m] for m in FIVE}
    little = knowledge.retrieve(
        [namespace], {"target": "gpu", "counter_source": "nvidia_ncu", "counters": five}
    )
    assert little.neighbours == 0 and little.transforms == []
    why = little.explanation
    assert why is not None and (why.states, why.states_on_target, why.comparable_states) == (1, 1, 0)
    missing = {m.dimension: m for m in why.missing_dimensions}
    assert missing["compute_fraction"].blocked_states == 1
    assert "smsp__sass_thread_inst_executed_op" in (missing["compute_fraction"].fill_with or "")
    assert missing["ridge_position"].fill_with is None  # ncu cannot measure it at all
    assert "compute_fraction, which this query lacks" in why.summary
    held_out = knowledge.retrieve(
        [namespace],
        {"target": "gpu", "counter_source": "nvidia_ncu", "counters": naive, "exclude_task": "matmul"},
    )
    assert held_out.neighbours == 0 and held_out.explanation is not None
    assert (
        held_out.explanation.excluded_by_task == 1
        and "left out by exclude_task" in held_out.explanation.summary
    )
    found = knowledge.retrieve(
        [namespace], {"target": "gpu", "counter_source": "nvidia_ncu", "counters": naive}
    )
    assert found.neighbours == 1 and [t.transform for t in found.transforms] == ["unroll"]


def test_no_dimension_error_names_what_the_source_reads(store: GraphStore, namespace: str) -> None:
    from kernelgraph.core.errors import InvalidInput

    knowledge = KnowledgeService(store)
    knowledge.upsert_targets(namespace, [factories.target("gpu", kind="cuda", arch="sm90")])
    with pytest.raises(InvalidInput, match=r"l1tex__t_sector_hit_rate\.pct") as caught:
        knowledge.retrieve(
            [namespace], {"target": "gpu", "counter_source": "nvidia_ncu", "counters": {"x": 1.0}}
        )
    assert caught.value.field == "counters"


def _example() -> str:
    text = (REPO / "docs" / "api.md").read_text()
    match = re.search(r"<!-- gpu-agent-example -->\n```python\n(.*?)```", text, re.S)
    assert match, "docs/api.md lost its worked GPU-agent example"
    return match.group(1)


def test_the_worked_gpu_example_in_the_docs_runs(
    cli_on_test_neo4j: None,
    namespace: str,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    from kernelgraph.core.settings import get_settings

    monkeypatch.setenv("KERNELGRAPH_NAMESPACE", namespace)
    monkeypatch.delenv("KERNELGRAPH_SERVICE_URL", raising=False)
    get_settings.cache_clear()
    monkeypatch.chdir(REPO)
    scope: dict[str, Any] = {}
    exec(compile(_example(), "docs/api.md", "exec"), scope)
    assert scope["little"].neighbours == 0
    assert "compute_fraction, which this query lacks" in scope["little"].explanation.summary
    assert [t.transform for t in scope["found"].transforms] == ["fuse"]
    assert scope["found"].transforms[0].best_speedup == pytest.approx(1.25, rel=0.01)
    printed = capsys.readouterr().out
    assert "['ridge_position']" in printed and "[('fuse', 1.25)]" in printed


def test_vocabulary_over_http(http: Any, keys: Keys) -> None:
    reply = http.get("/v1/vocabulary", headers=bearer(keys.reader))
    assert reply.status_code == 200, reply.text
    body = reply.json()
    assert body["shipped"] is True
    assert {"tile", "fuse", "vectorize"} <= {t["name"] for t in body["transforms"]}
    assert all(t["description"] for t in body["transforms"])
    assert "softmax" in {t["name"] for t in body["tasks"]} and "row-reduction" in body["families"]
    assert body["backends"][0] == "c" and "triton" in body["backends"]
    ncu = body["counter_sources"]["nvidia_ncu"]
    assert "gpu__time_duration.sum" in ncu["counters"] and ncu["cannot_fill"] == ["ridge_position"]
    assert [d["name"] for d in body["signature"]["dimensions"]] == list(DIMENSION_NAMES)
    target = {"name": "gpu", "kind": "cuda", "arch": "sm90", "peak_gflops": 67000.0, "peak_gbps": 3350.0}
    assert (
        http.post("/v1/targets", json={"targets": [target]}, headers=bearer(keys.writer)).status_code == 200
    )
    counters = {"dram__throughput.avg.pct_of_peak_sustained_elapsed": 84.0, "lts__t_sector_hit_rate.pct": 48.0,
                "l1tex__t_sector_hit_rate.pct": 31.0}  # fmt: skip
    answer = http.post("/v1/retrieve", headers=bearer(keys.reader),
                       json={"target": "gpu", "counter_source": "nvidia_ncu", "counters": counters})  # fmt: skip
    assert answer.status_code == 200, answer.text
    explanation = answer.json()["explanation"]
    assert explanation["measured_dimensions"] == ["memory_fraction", "l1_miss_rate", "llc_miss_rate"]
    assert explanation["states"] == 0 and "nothing is recorded here yet" in explanation["summary"]


def test_an_mcp_only_agent_registers_records_flat_retrieves_and_reads_evidence(
    store: GraphStore, namespace: str
) -> None:
    attempt = factories.attempt("flat:0", target_name="my-cpu")
    flat = {k: v for k, v in attempt.items() if v is not None and k != "transform"}
    flat.update(transform="unroll", params={"factor": 4})

    async def session() -> dict[str, Any]:
        out: dict[str, Any] = {}
        async with Client(
            build_server(lambda: InProcessClient(KnowledgeService(store), namespace))
        ) as client:
            out["tools"] = {t.name: t for t in (await client.list_tools()).tools}
            out["unregistered"] = await client.call_tool("record_attempt", flat)
            out["register"] = await client.call_tool(
                "register_target",
                {
                    "name": "my-cpu",
                    "kind": "cpu",
                    "arch": "x86-64-v3",
                    "peak_gflops": 200.0,
                    "peak_gbps": 20.0,
                    "cores": 2,
                },
            )
            out["bad_target"] = await client.call_tool(
                "register_target", {"name": "x y", "kind": "cpu", "arch": "a"}
            )
            out["flat"] = await client.call_tool("record_attempt", flat)
            out["wrapped"] = await client.call_tool(
                "record_attempt", {"attempt": {**attempt, "attempt_key": "flat:1"}}
            )
            out["retrieve"] = await client.call_tool(
                "retrieve_transforms", {"target": "my-cpu", "signature": factories.masked(0.5)}
            )
            keys = out["retrieve"].structured_content["transforms"][0]["evidence_attempt_keys"]
            out["evidence"] = await client.call_tool("evidence", {"attempt_keys": keys})
            out["vocabulary"] = await client.call_tool("vocabulary", {})
        return out

    out = anyio.run(session)
    for name in ("register_target", "evidence", "vocabulary", "record_attempt"):
        assert len(out["tools"][name].description or "") > 200, name
    assert "attempt_key" in out["tools"]["record_attempt"].input_schema["properties"]  # flat arguments
    unregistered = out["unregistered"].content[0].text
    assert (
        out["unregistered"].is_error and "register_target tool" in unregistered and "/v1/" not in unregistered
    )
    assert out["register"].structured_content == {"names": ["my-cpu"]}
    assert out["bad_target"].is_error and "name" in out["bad_target"].content[0].text
    assert out["flat"].structured_content["created"] is True
    assert out["wrapped"].structured_content["created"] is True  # the old shape still works
    assert {a["attempt_key"] for a in out["evidence"].structured_content["attempts"]} == {"flat:0", "flat:1"}
    vocabulary = out["vocabulary"].structured_content
    unroll = next(t for t in vocabulary["transforms"] if t["name"] == "unroll")
    assert unroll["attempts"] == 2 and unroll["description"]


def test_retrieve_from_the_terminal_with_an_ncu_export(
    store: GraphStore, namespace: str, cli_on_test_neo4j: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    from typer.testing import CliRunner

    from kernelgraph.cli import app
    from kernelgraph.core.settings import get_settings

    monkeypatch.setenv("KERNELGRAPH_NAMESPACE", namespace)
    get_settings.cache_clear()
    export = FIXTURES / "softmax_details.csv"
    naive = record_on_gpu(store, namespace, "cli:0")
    runner = CliRunner()
    five = [arg for metric in FIVE for arg in ("--counter", f"{metric}={naive[metric]}")]
    little = runner.invoke(app, ["retrieve", "--target", "gpu", *five])
    assert little.exit_code == 0, little.output
    assert "why: 0 of k=20 neighbours found" in little.stdout.replace("\n", " ")
    found = runner.invoke(app, ["retrieve", "--target", "gpu", "--ncu-csv", str(export), "--json"])
    assert found.exit_code == 0, found.output
    answer = json.loads(found.stdout)
    assert answer["neighbours"] == 1 and [t["transform"] for t in answer["transforms"]] == ["unroll"]
    assert answer["explanation"]["states"] == 1  # 1 < k: still explained
    # Within the query's vocabulary: the one state's evidence is for unroll, which this query cannot apply.
    within = runner.invoke(app, ["retrieve", "--target", "gpu", "--ncu-csv", str(export), "--json", "-t", "tile",
                                 "--transform", "vectorize"])  # fmt: skip
    assert within.exit_code == 0, within.output
    assert json.loads(within.stdout)["neighbours"] == 0 and json.loads(within.stdout)["transforms"] == []
    bad = runner.invoke(app, ["retrieve", "--target", "gpu", "--ncu-csv", str(FIXTURES / "README.md")])
    assert bad.exit_code == 2 and "not an ncu --csv export" in bad.stderr
