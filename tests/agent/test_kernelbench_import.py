"""KernelBench timing import and `kernelgraph transfer` on the real Neo4j, from tests/fixtures/kernelbench.

The fixture has three hardware folders with ten problems across families and three compile configs.
Speedups are built so that H100 and A100 order the problems the same way (rank correlation 1) and
L40S in reverse (-1). Malformed files: truncated JSON and a missing mean (A100), a NaN mean, an
unknown level key with a negative mean, and a top-level list (L40S); one config entry of H100 has no
eager timing.
"""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from kernelgraph.agent.cli import app
from kernelgraph.agent.importers.kernelbench import (
    config_of,
    import_timings,
    parse_timing_file,
    pattern_of,
    target_for,
    task_of,
)
from kernelgraph.client.settings import Settings
from kernelgraph.service.inprocess import InProcessClient
from kernelgraph.service.knowledge import KnowledgeService
from kernelgraph.service.store import GraphStore

FIXTURE = Path(__file__).resolve().parent.parent / "fixtures" / "kernelbench"
PROBLEMS = 10


def label_counts(store: GraphStore, namespace: str) -> dict[str, int]:
    rows = store.driver.execute_query(
        "MATCH (n {namespace: $ns}) RETURN labels(n)[0] AS label, count(*) AS c", ns=namespace,
        database_=store.database,
    ).records  # fmt: skip
    return {r["label"]: r["c"] for r in rows}


def speedup(hardware: str, index: int, config: int) -> float:
    """The speedups the fixture was generated with (problem index, config index)."""
    base = {"H100_together": 0.55 + 0.2 * index, "A100_modal": 0.65 + 0.15 * index,
            "L40S_matx3": 2.35 - 0.2 * index}[hardware]  # fmt: skip
    return base + 0.01 * config


@pytest.fixture
def client(store: GraphStore, namespace: str) -> InProcessClient:
    return InProcessClient(KnowledgeService(store), namespace)


@pytest.fixture
def cli_settings(monkeypatch: pytest.MonkeyPatch, neo4j_settings: Settings) -> Settings:
    """Make the CLI talk to the test session's Neo4j."""
    monkeypatch.setattr("kernelgraph.client.settings.get_settings", lambda: neo4j_settings)
    return neo4j_settings


# ---- pure parts ------------------------------------------------------------------------------------
def test_patterns_by_family() -> None:
    assert pattern_of("1_Square_matrix_multiplication_.py") == "dense-matmul"
    assert pattern_of("12_Gemm_Multiply_LeakyReLU.py") == "dense-matmul"
    assert pattern_of("1_Conv2D_ReLU_BiasAdd.py") == "convolution"
    assert pattern_of("40_LayerNorm.py") == "normalization"
    assert pattern_of("41_Max_Pooling_1D.py") == "pooling"
    assert pattern_of("94_MSELoss.py") == "loss"
    assert pattern_of("95_CrossEntropyLoss.py") == "loss"
    assert pattern_of("23_Softmax.py") == "row-softmax"
    assert pattern_of("47_Sum_reduction_over_a_dimension.py") == "reduction"
    assert pattern_of("51_Argmax_over_a_dimension.py") == "reduction"
    assert pattern_of("19_ReLU.py") == "activation"
    assert pattern_of("88_MinGPTNewGelu.py") == "activation"
    assert pattern_of("12_VGG19.py") == "other"


def test_names_configs_and_targets() -> None:
    assert config_of("baseline_time_torch.json") is not None and config_of("baseline_time_torch.json").eager  # type: ignore[union-attr]
    config = config_of("baseline_time_torch_compile_inductor_max-autotune.json")
    assert config is not None and config.transform == "torch_compile:inductor:max-autotune"
    assert config_of("notes.json") is None
    assert task_of(1, "1_Square_matrix_multiplication_.py") == "kb-l1-1-square-matrix-multiplication"
    h100 = target_for("H100_together")
    assert (h100.arch, h100.kind.value, h100.peak_gbps) == ("sm90", "cuda", 3350.0)
    assert target_for("L40S_matx3").arch == "sm89"  # not L4
    assert target_for("B200_x").arch == "sm100"
    assert target_for("MI300_lab").arch == "unknown" and target_for("MI300_lab").peak_gflops is None


def test_malformed_files_report_every_bad_key() -> None:
    from kernelgraph.agent.importers.kernelbench import MalformedFile

    with pytest.raises(MalformedFile) as caught:
        parse_timing_file(
            FIXTURE / "L40S_matx3" / "baseline_time_torch_compile_inductor_max-autotune-no-cudagraphs.json"
        )
    keys = {p.key for p in caught.value.problems}
    assert keys == {"lvl1", "level2.1_Conv2D_ReLU_BiasAdd.py"}
    assert len(parse_timing_file(FIXTURE / "H100_together" / "baseline_time_torch.json")) == PROBLEMS


# ---- against Neo4j ---------------------------------------------------------------------------------
@pytest.mark.neo4j
def test_import_counts_speedups_and_idempotence(
    store: GraphStore, namespace: str, client: InProcessClient
) -> None:
    summary = import_timings(FIXTURE, client, batch_size=7)  # small batches: several per hardware
    by_target = {h.target: h for h in summary.hardware}
    assert set(by_target) == {"H100_together", "A100_modal", "L40S_matx3"}
    assert {t: (h.problems, len(h.configs), h.attempts, h.created) for t, h in by_target.items()} == {
        "H100_together": (10, 3, 30, 30),
        "A100_modal": (10, 2, 20, 20),
        "L40S_matx3": (10, 2, 20, 20),
    }
    labels = label_counts(store, namespace)
    assert labels["HardwareTarget"] == 3
    assert labels["Transform"] == 3  # default, max-autotune, cudagraphs (only valid on H100)
    assert labels["Kernel"] == PROBLEMS + PROBLEMS * 3  # eager kernels are shared by every hardware
    assert labels["Attempt"] == 70
    assert labels["Measurement"] == 3 * PROBLEMS + 70
    # Nothing of a malformed file was written: the reduce-overhead and no-cudagraphs configs do not exist.
    names = {t["transform"] for t in client.list_transforms()}
    assert names == {"torch_compile:inductor:default", "torch_compile:inductor:max-autotune",
                     "torch_compile:cudagraphs:default"}  # fmt: skip
    targets = {t["name"]: t for t in client.list_targets()}
    assert targets["A100_modal"]["arch"] == "sm80" and targets["A100_modal"]["attempts"] == 20

    # Speedups: eager mean / compiled mean on the same hardware.
    evidence = {e["attempt_key"]: e for e in client.knowledge.evidence(
        [namespace], ["kb:H100_together:level1:1_Square_matrix_multiplication_.py:inductor:max-autotune",
                      "kb:L40S_matx3:level2:12_Gemm_Multiply_LeakyReLU.py:inductor:default"])}  # fmt: skip
    h100 = evidence["kb:H100_together:level1:1_Square_matrix_multiplication_.py:inductor:max-autotune"]
    assert h100["speedup"] == pytest.approx(speedup("H100_together", 0, 1), rel=1e-4)
    assert h100["outcome"] == "discarded"  # 0.56x: compiling made it slower
    assert h100["parent_median_ns"] == pytest.approx(2.0e6)
    l40s = evidence["kb:L40S_matx3:level2:12_Gemm_Multiply_LeakyReLU.py:inductor:default"]
    assert l40s["speedup"] == pytest.approx(speedup("L40S_matx3", 9, 0), rel=1e-4)
    assert l40s["outcome"] == "discarded"

    # Malformed entries are reported with path and key.
    skipped = {(Path(s.path).name, s.key) for h in summary.hardware for s in h.skipped}
    assert ("baseline_time_torch_compile_cudagraphs_default.json", None) in skipped  # truncated JSON
    assert (
        "baseline_time_torch_compile_inductor_reduce-overhead.json",
        "level2.12_Gemm_Multiply_LeakyReLU.py",
    ) in skipped
    assert (
        "baseline_time_torch_compile_cudagraphs_default.json",
        "level1.1_Square_matrix_multiplication_.py",
    ) in skipped
    assert ("baseline_time_torch_compile_inductor_default.json", "level1.99_TripletMarginLoss.py") in skipped
    assert len(by_target["L40S_matx3"].skipped) == 4

    again = import_timings(FIXTURE, client)
    assert (again.created, again.attempts) == (0, 70)
    assert label_counts(store, namespace) == labels


@pytest.mark.neo4j
def test_malformed_eager_file_skips_its_hardware(tmp_path: Path, store: GraphStore, namespace: str,
                                                 client: InProcessClient) -> None:  # fmt: skip
    hardware = tmp_path / "H100_broken"
    shutil.copytree(FIXTURE / "H100_together", hardware)
    data = json.loads((hardware / "baseline_time_torch.json").read_text())
    data["level1"]["19_ReLU.py"]["mean"] = 0
    (hardware / "baseline_time_torch.json").write_text(json.dumps(data))
    summary = import_timings(tmp_path, client)
    assert summary.created == 0
    reasons = [(s.key, s.reason) for s in summary.hardware[0].skipped]
    assert ("level1.19_ReLU.py", "mean: must be finite and positive, got 0") in reasons
    assert label_counts(store, namespace) == {}


@pytest.mark.neo4j
def test_cli_import_and_transfer(cli_settings: Settings, namespace: str) -> None:
    runner = CliRunner()
    first = runner.invoke(
        app, ["import", "kernelbench-timing", str(FIXTURE), "--namespace", namespace, "--json"]
    )
    assert first.exit_code == 0, first.output
    data = json.loads(first.stdout)
    assert (data["targets"], data["attempts"], data["created"], data["skipped_total"]) == (3, 70, 70, 7)
    second = runner.invoke(app, ["import", "kernelbench-timing", str(FIXTURE), "-n", namespace, "--json"])
    assert json.loads(second.stdout)["created"] == 0

    def transfer(*args: str) -> dict[str, Any]:
        result = runner.invoke(app, ["transfer", *args, "--namespace", namespace, "--json"])
        assert result.exit_code == 0, result.output
        out: dict[str, Any] = json.loads(result.stdout)
        return out

    same = transfer("--from", "H100_together", "--to", "A100_modal")
    rows = {r["transform"]: r for r in same["transforms"]}
    assert set(rows) == {"torch_compile:inductor:default", "torch_compile:inductor:max-autotune"}
    for row in rows.values():
        assert row["pairs"] == PROBLEMS
        assert row["rank_correlation"] == pytest.approx(1.0)
        assert row["agreement_rate"] == pytest.approx(1.0)
    default = rows["torch_compile:inductor:default"]
    expected = sum(math.log(speedup("H100_together", i, 0)) for i in range(PROBLEMS)) / PROBLEMS
    assert default["mean_log_speedup_source"] == pytest.approx(expected, rel=1e-3)
    assert same["overall_rank_correlation"] == pytest.approx(1.0)

    reversed_ = transfer("--from", "H100_together", "--to", "L40S_matx3")
    for row in reversed_["transforms"]:
        assert row["rank_correlation"] == pytest.approx(-1.0)
        assert row["agreement_rate"] == pytest.approx(0.4)  # 3 slowdowns on each side, at opposite ends
    assert reversed_["overall_rank_correlation"] < -0.9

    matmul = transfer("--from", "H100_together", "--to", "A100_modal", "--pattern", "dense-matmul")
    assert {r["pairs"] for r in matmul["transforms"]} == {2}  # square matmul and the level-2 gemm
    assert all(r["rank_correlation"] is None for r in matmul["transforms"])  # too few pairs

    table = runner.invoke(app, ["transfer", "--from", "H100_together", "--to", "A100_modal", "-n", namespace])
    assert table.exit_code == 0 and "overall rank correlation" in table.output
    missing = runner.invoke(app, ["transfer", "--from", "H100_together", "--to", "nope", "-n", namespace])
    assert missing.exit_code == 1 and "unknown target" in missing.output
