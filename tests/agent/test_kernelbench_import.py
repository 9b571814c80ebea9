"""KernelBench timing import and `kernelgraph transfer --from/--to`, from tests/fixtures/kernelbench.

tests/agent/test_kernelbench_real.py runs the importer, the transfer matrix and the prediction on the
real published timings. The fixture has three hardware folders with ten problems across families and
three compile configs.
Speedups are built so that H100 and A100 order the problems the same way (rank correlation 1) and
L40S in reverse (-1). Malformed files: truncated JSON and a missing mean (A100), a NaN mean, an
unknown level key with a negative mean, and a top-level list (L40S); one config entry of H100 has no
eager timing (it is kept as a lone measurement).
"""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from kernelgraph.cli import app
from kernelgraph.core.settings import Settings
from kernelgraph.service.importers.kernelbench import (
    config_of,
    differs_from_folder,
    import_timings,
    parse_timing_file,
    pattern_of,
    target_for,
    target_name,
    task_of,
)
from kernelgraph.service.inprocess import InProcessClient
from kernelgraph.service.knowledge import KnowledgeService
from kernelgraph.service.store import GraphStore

FIXTURE = Path(__file__).resolve().parent.parent / "fixtures" / "kernelbench"
PROBLEMS = 10
H100 = "H100_together:H100-80GB-HBM3"
A100 = "A100_modal:A100-SXM4-80GB"
L40S = "L40S_matx3:L40S"


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
    monkeypatch.setattr("kernelgraph.core.settings.get_settings", lambda: neo4j_settings)
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
    # The published data names the cudagraphs backend without a mode; both forms are one configuration.
    published, suffixed = (
        config_of(f"baseline_time_torch_compile_cudagraphs{s}.json") for s in ("", "_default")
    )
    assert (
        published is not None
        and published == suffixed
        and published.transform == "torch_compile:cudagraphs:default"
    )
    assert config_of("notes.json") is None
    assert task_of(1, "1_Square_matrix_multiplication_.py") == "kb-l1-1-square-matrix-multiplication"
    h100 = target_for("H100_together", "NVIDIA H100 80GB HBM3")
    assert (h100.name, h100.arch, h100.kind.value, h100.peak_gbps) == (H100, "sm90", "cuda", 3350.0)
    assert target_for("L40S_matx3", "NVIDIA L40S").arch == "sm89"  # not L4
    assert target_for("B200_x").arch == "sm100" and target_for("B200_x").name == "B200_x"  # no hardware field
    assert target_for("MI300_lab").arch == "unknown" and target_for("MI300_lab").peak_gflops is None
    # The row's hardware, not the folder, says which GPU: an A10 row in the A10G folder is an A10.
    a10 = target_for("A10G_modal", "NVIDIA A10")
    assert (a10.name, a10.sm_count, a10.host) == ("A10G_modal:A10", 72, "A10G_modal")
    assert target_for("A100_modal", "NVIDIA A100-SXM4-40GB").peak_gbps == 1555.0
    assert target_name("T4_modal", "Tesla T4") == "T4_modal:T4"
    assert differs_from_folder("A10G_modal", "NVIDIA A10") and not differs_from_folder(
        "A10G_modal", "NVIDIA A10G"
    )
    assert differs_from_folder("A100-80GB_modal", "NVIDIA A100-SXM4-40GB")
    assert not differs_from_folder("A100_modal", "NVIDIA A100-SXM4-80GB")  # the folder names no size
    assert differs_from_folder("H100_together", "NVIDIA H200")


def test_malformed_files_report_every_bad_key(tmp_path: Path) -> None:
    from kernelgraph.service.importers.kernelbench import MalformedFile

    with pytest.raises(MalformedFile) as caught:
        parse_timing_file(
            FIXTURE / "L40S_matx3" / "baseline_time_torch_compile_inductor_max-autotune-no-cudagraphs.json"
        )
    keys = {p.key for p in caught.value.problems}
    assert keys == {"lvl1", "level2.1_Conv2D_ReLU_BiasAdd.py"}
    assert len(parse_timing_file(FIXTURE / "H100_together" / "baseline_time_torch.json").timings) == PROBLEMS
    # null is a problem that did not run, not a malformed file; a string entry is malformed.
    path = tmp_path / "baseline_time_torch.json"
    path.write_text(
        json.dumps({"level1": {"1_a.py": None, "2_b.py": {"mean": 1.0, "hardware": "NVIDIA L4"}}})
    )
    parsed = parse_timing_file(path)
    assert parsed.nulls == [("level1", "1_a.py")] and [t.problem for t in parsed.timings] == ["2_b.py"]
    path.write_text(json.dumps({"level1": {"1_a.py": "fast"}}))
    with pytest.raises(MalformedFile) as caught:
        parse_timing_file(path)
    assert caught.value.problems[0].key == "level1.1_a.py" and "or null" in caught.value.problems[0].reason


# ---- against Neo4j ---------------------------------------------------------------------------------
@pytest.mark.neo4j
def test_import_counts_speedups_and_idempotence(
    store: GraphStore, namespace: str, client: InProcessClient
) -> None:
    summary = import_timings(FIXTURE, client, batch_size=7)  # small batches: several per hardware
    by_folder = {h.folder: h for h in summary.hardware}
    assert set(by_folder) == {"H100_together", "A100_modal", "L40S_matx3"}
    assert {f: ([t.target for t in h.targets], len(h.configs), h.attempts, h.created) for f, h in by_folder.items()} == {
        "H100_together": ([H100], 3, 30, 30),
        "A100_modal": ([A100], 2, 20, 20),
        "L40S_matx3": ([L40S], 2, 20, 20),
    }  # fmt: skip
    # The compiled entry with no eager timing is kept as a lone measurement, not dropped.
    assert (
        by_folder["H100_together"].measurements_alone,
        by_folder["H100_together"].measurements_created,
    ) == (1, 1)
    labels = label_counts(store, namespace)
    assert labels["HardwareTarget"] == 3
    assert labels["Transform"] == 3  # default, max-autotune, cudagraphs (only valid on H100)
    assert labels["Kernel"] == PROBLEMS + PROBLEMS * 3 + 1  # eager kernels are shared; + the lone one
    assert labels["Attempt"] == 70
    assert labels["Measurement"] == 3 * PROBLEMS + 70 + 1
    # Nothing of a malformed file was written: the reduce-overhead and no-cudagraphs configs do not exist.
    names = {t["transform"] for t in client.list_transforms()}
    assert names == {"torch_compile:inductor:default", "torch_compile:inductor:max-autotune",
                     "torch_compile:cudagraphs:default"}  # fmt: skip
    targets = {t["name"]: t for t in client.list_targets()}
    assert targets[A100]["arch"] == "sm80" and targets[A100]["attempts"] == 20
    assert targets[H100]["measurements"] == PROBLEMS + 30 + 1

    # Speedups: eager mean / compiled mean on the same hardware.
    h100_key = f"kb:{H100}:level1:1_Square_matrix_multiplication_.py:inductor:max-autotune"
    l40s_key = f"kb:{L40S}:level2:12_Gemm_Multiply_LeakyReLU.py:inductor:default"
    evidence = {e["attempt_key"]: e for e in client.knowledge.evidence([namespace], [h100_key, l40s_key])}
    h100 = evidence[h100_key]
    assert h100["speedup"] == pytest.approx(speedup("H100_together", 0, 1), rel=1e-4)
    assert h100["outcome"] == "discarded"  # 0.56x: compiling made it slower
    assert h100["parent_median_ns"] == pytest.approx(2.0e6)
    l40s = evidence[l40s_key]
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
    assert len(by_folder["L40S_matx3"].skipped) == 4

    again = import_timings(FIXTURE, client)
    assert (again.created, again.attempts) == (0, 70)
    assert label_counts(store, namespace) == labels


@pytest.mark.neo4j
def test_malformed_eager_file_is_reported_and_nothing_pairs(tmp_path: Path, store: GraphStore, namespace: str,
                                                 client: InProcessClient) -> None:  # fmt: skip
    hardware = tmp_path / "H100_broken"
    shutil.copytree(FIXTURE / "H100_together", hardware)
    data = json.loads((hardware / "baseline_time_torch.json").read_text())
    data["level1"]["19_ReLU.py"]["mean"] = 0
    (hardware / "baseline_time_torch.json").write_text(json.dumps(data))
    summary = import_timings(tmp_path, client)
    reasons = [(s.key, s.reason) for s in summary.hardware[0].skipped]
    # Without a valid eager file nothing pairs: the compiled times (11 + 10 + 10) are kept alone.
    assert summary.attempts == 0 and summary.hardware[0].measurements_alone == summary.created == 31
    assert ("level1.19_ReLU.py", "mean: must be finite and positive, got 0") in reasons
    assert label_counts(store, namespace)["Measurement"] == 31 and "Attempt" not in label_counts(
        store, namespace
    )


@pytest.mark.neo4j
def test_cli_import_and_transfer(cli_settings: Settings, namespace: str) -> None:
    runner = CliRunner()
    first = runner.invoke(
        app, ["import", "kernelbench-timing", str(FIXTURE), "--namespace", namespace, "--json"]
    )
    assert first.exit_code == 0, first.output
    data = json.loads(first.stdout)
    assert (data["targets"], data["attempts"], data["created"], data["skipped_total"]) == (3, 70, 71, 6)
    second = runner.invoke(app, ["import", "kernelbench-timing", str(FIXTURE), "-n", namespace, "--json"])
    assert json.loads(second.stdout)["created"] == 0

    def transfer(*args: str) -> dict[str, Any]:
        result = runner.invoke(app, ["transfer", *args, "--namespace", namespace, "--json"])
        assert result.exit_code == 0, result.output
        out: dict[str, Any] = json.loads(result.stdout)
        return out

    same = transfer("--from", H100, "--to", A100)
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

    reversed_ = transfer("--from", H100, "--to", L40S)
    for row in reversed_["transforms"]:
        assert row["rank_correlation"] == pytest.approx(-1.0)
        assert row["agreement_rate"] == pytest.approx(0.4)  # 3 slowdowns on each side, at opposite ends
    assert reversed_["overall_rank_correlation"] < -0.9

    matmul = transfer("--from", H100, "--to", A100, "--pattern", "dense-matmul")
    assert {r["pairs"] for r in matmul["transforms"]} == {2}  # square matmul and the level-2 gemm
    assert all(r["rank_correlation"] is None for r in matmul["transforms"])  # too few pairs

    table = runner.invoke(app, ["transfer", "--from", H100, "--to", A100, "-n", namespace])
    assert table.exit_code == 0 and "overall rank correlation" in table.output
    missing = runner.invoke(app, ["transfer", "--from", H100, "--to", "nope", "-n", namespace])
    assert missing.exit_code == 1 and "unknown target" in missing.output
    neither = runner.invoke(app, ["transfer", "-n", namespace])
    assert neither.exit_code == 1 and "--matrix" in neither.output


@pytest.mark.neo4j
def test_a_graph_from_the_per_folder_importer_still_answers_after_schema_0004(
    store: GraphStore, namespace: str, client: InProcessClient
) -> None:
    """Before schema 0004 the importer made one target per folder (`A10G_modal`) and paired times from
    different GPUs. Such a graph, written through the same write path, keeps everything; the old
    targets are marked superseded, so the matrix leaves them out, and every query still answers."""
    from kernelgraph.core.models import HardwareTarget
    from kernelgraph.service.importers.kernelbench import Config, _measurement, _source, parse_timing_file
    from kernelgraph.service.queries import migrations

    old_targets = ["H100_together", "A100_modal"]  # the previous importer's names and descriptions
    client.upsert_targets([HardwareTarget(name=name, kind="cuda", arch="sm90",
                                          description=f"KernelBench timing directory {name} (NVIDIA GPU)")
                           for name in old_targets])  # fmt: skip
    for folder in old_targets:
        eager = parse_timing_file(FIXTURE / folder / "baseline_time_torch.json").timings
        compiled = parse_timing_file(
            FIXTURE / folder / "baseline_time_torch_compile_inductor_default.json"
        ).timings
        by_key = {t.key: t for t in compiled}
        config = Config("inductor", "default")

        def kernel(level: int, problem: str, cfg: Config) -> dict[str, Any]:
            return {"task": task_of(level, problem), "backend": "torch", "source": _source(level, problem, cfg),
                    "patterns": [pattern_of(problem)], "variant": "eager" if cfg.eager else cfg.transform}  # fmt: skip

        client.record_attempts([
            {"attempt_key": f"kb:{folder}:{t.level_key}:{t.problem}:inductor:default", "run_id": "kernelbench-timing",
             "agent": "kernelbench-import", "target": folder, "parent": kernel(t.level, t.problem, Config()),
             "parent_measurement": _measurement(t), "transform": {"name": config.transform,
             "params": {"backend": "inductor", "mode": "default"}}, "child": kernel(t.level, t.problem, config),
             "child_measurement": {**_measurement(by_key[t.key]), "parent_median_ns": t.mean_ms * 1e6},
             "outcome": "kept" if t.mean_ms > by_key[t.key].mean_ms else "discarded",
             "speedup": t.mean_ms / by_key[t.key].mean_ms}
            for t in eager if t.key in by_key
        ])  # fmt: skip
    before = label_counts(store, namespace)
    assert {t.name for t in client.transfer_matrix(resamples=0).targets} == set(old_targets)

    migration = next(m for m in migrations() if m.name.startswith("0004_"))
    for _ in range(2):  # applying twice changes nothing more
        for statement in migration.statements():
            store.driver.execute_query(statement, database_=store.database)

    assert label_counts(store, namespace) == before  # nothing lost
    targets = {t["name"]: t for t in client.list_targets()}
    assert all(
        targets[name]["superseded_by"] and targets[name]["attempts"] == PROBLEMS for name in old_targets
    )
    assert client.transfer_matrix(resamples=0).targets == []  # left out of the matrix...
    old = client.transfer("H100_together", "A100_modal")  # ...while the pairwise query still answers
    assert old.transforms[0].pairs == PROBLEMS
    # A re-import adds the per-model targets beside them, and the matrix sees only those.
    import_timings(FIXTURE, client)
    assert {t.name for t in client.transfer_matrix(resamples=0).targets} == {H100, A100, L40S}
