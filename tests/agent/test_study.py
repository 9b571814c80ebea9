"""Study v2: its arithmetic on constructed landscapes, and the quick run end to end on the committed ones."""

from __future__ import annotations

import gzip
import itertools
import json
import math
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from kernelgraph.agent.proposers.base import ProposalContext
from kernelgraph.agent.proposers.experience import ExperienceProposer
from kernelgraph.agent.proposers.memoryless import MemorylessProposer
from kernelgraph.agent.targets import get_target
from kernelgraph.agent.tasks import get_task
from kernelgraph.agent.tasks.base import Task
from kernelgraph.agent.vocabulary import query_vocabulary
from kernelgraph.bench import stats
from kernelgraph.bench.landscapes import State, config_key, space
from kernelgraph.bench.study import arms, landscapes, protocol, simulation, statistics
from kernelgraph.cli import app
from kernelgraph.core.models import RetrievedTransform, RetrieveRequest, RetrieveResponse
from tests.agent.yardstick_checks import assert_yardsticks

REPO = Path(__file__).resolve().parents[2]


def _landscape(label: str = "A", noise: float = 1.0) -> landscapes.Landscape:
    """reduction with a made-up landscape: threads pay only at the large instance, and hurt the small one."""
    task = get_task("reduction")
    times: dict[tuple[str, str], float] = {}
    for config in space(task):
        for instance in ("8192", "262144", "2097152"):
            t = 100.0
            if config["parallel"]:
                t *= 0.4 if instance == "2097152" else 3.0
            if config["simd"]:
                t *= 0.8
            times[(config_key(config), instance)] = t * noise
    outcomes = {key: "kept" for key in times}
    return landscapes.Landscape(task, label, times, outcomes, {}, ())


def test_a_simulated_run_keeps_only_what_is_faster_and_scores_on_the_other_landscape() -> None:
    searched, scored = _landscape("A"), _landscape("B", noise=1.1)
    run = simulation.simulate(
        searched.task,
        "2097152",
        searched,
        MemorylessProposer(3),
        12,
        get_target("cpu-x86-64-v2", measure=False),
    )
    assert len(run.trajectory) == 12
    times = [searched.time(key, "2097152") for key in run.trajectory]
    assert all(b is not None and a is not None and b <= a for a, b in itertools.pairwise(times))
    for step in run.steps:  # each attempt is judged against the best at that time, by the 2% rule
        assert (step.outcome.value == "kept") == (step.speedup is not None and step.speedup > 1.02)
    fractions = simulation.curve(scored, "2097152", run)
    # The scored landscape is 10% slower everywhere: fractions of its own oracle are unaffected.
    assert fractions[-1] == pytest.approx(
        searched.oracle("2097152")[1] / (searched.time(run.trajectory[-1], "2097152") or math.inf)
    )
    assert statistics.attempts_to_reach([0.5, 0.95, 1.0]) == 2 and statistics.attempts_to_reach([0.5]) is None


def test_tpe_maps_knob_combinations_outside_the_space_to_configs_in_it() -> None:
    land = _landscape()
    run = simulation.tpe_run(land.task, "2097152", land, 10, seed=1)
    assert len(run.trajectory) == 10
    assert all(land.time(key, "2097152") is not None for key in run.trajectory)
    valid = {config_key(c): c for c in space(land.task)}
    odd = {**land.task.baseline_config, "parallel": False, "schedule": "guided"}  # unreachable
    assert config_key(odd) not in valid
    assert config_key(simulation.nearest_valid(odd, land.task.baseline_config, valid)) in valid


def test_paired_ratios_bootstrap_and_the_declared_verdicts() -> None:
    arm = {f"i{n}": 0.9 for n in range(10)}
    control = {f"i{n}": 0.6 for n in range(10)}
    c = stats.paired(arm, control)
    assert c["ratio"] == pytest.approx(1.5) and c["wins"] == 10 and c["losses"] == 0
    assert c["ci"][0] == pytest.approx(1.5) and c["p_one_sided"] < 0.01
    mixed = stats.paired({"a": 1.0, "b": 0.5, "c": 1.0}, {"a": 0.5, "b": 1.0, "c": 1.0})
    assert mixed["ties"] == 1 and mixed["ci"][0] < 1.0 < mixed["ci"][1]
    comparisons = {f"counters@8 vs {x}@8": c for x in ("text", "label", "tpe")}
    comparisons["counters@8 vs memoryless@32"] = mixed
    verdicts = statistics.verdicts({"summary": {"instance": {"comparisons": comparisons}}})
    assert verdicts["counters@8 beats text@8"]["met"]
    assert verdicts["counters@8 reaches memoryless@32"]["met"] == (mixed["ratio"] >= 1.0)


def test_held_out_families_leave_out_every_instance_of_the_family() -> None:
    tasks = {name: get_task(name) for name in ("softmax", "matmul")}
    family = arms.Unit("family", "A", "B", "softmax", "16x256")
    assert set(arms.exclusions(family, tasks)) == {f"softmax:{i.name}" for i in tasks["softmax"].instances}
    assert arms.label_tasks(family, tasks) == []  # nothing of its kind is left to retrieve by label
    instance = arms.Unit("instance", "A", "B", "softmax", "16x256")
    assert arms.exclusions(instance, tasks) == ["softmax:16x256"]
    assert "softmax:16x256" not in arms.label_tasks(instance, tasks)


@pytest.mark.slow
def test_quick_study_runs_end_to_end_and_the_mechanism_holds(
    cli_on_test_neo4j: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    landscapes = tmp_path / "landscapes"
    shutil.copytree(REPO / "results" / "landscapes", landscapes)  # the committed measurements
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(
        app, ["bench", "study", "--quick", "--json", "--landscapes", str(landscapes), "--results-dir", "out"]
    )
    assert result.exit_code == 0, result.output
    summary = json.loads(result.stdout.strip().splitlines()[-1])
    arms = summary["fraction_of_oracle"]["instance"]
    assert set(arms) == {a.name for a in protocol.ARMS}
    for name, fractions in arms.items():
        assert 0.0 < fractions["4"] <= 1.0 + 1e-9, name
    mechanism = summary["mechanism"]
    assert mechanism["best_differs"], mechanism["best"]
    assert mechanism["counters_pick_own_instance"], mechanism["counters"]
    assert mechanism["text_cannot_tell"], mechanism["text"]
    for name, over in summary["geomean_speedup_vs_library"]["instance"].items():
        assert over["4"] is not None and over["4"] > 0.0, name  # every run has a library figure
    report = json.loads((tmp_path / "out" / "study-quick-latest.json").read_text())
    assert report["protocol"]["seeds"] == 3 and report["protocol"]["budgets"] == [4]
    # Each instance's best beside the library (timed once per instance) and the roofline.
    for name, entry in report["landscapes"].items():
        for per in entry["instances"].values():
            marks = per["A"]["yardsticks"]
            assert_yardsticks(marks)
            assert marks["median_ns"] == per["A"]["best_ns"] and marks["library"], name
            assert marks["speedup_vs_naive"] == pytest.approx(per["A"]["oracle_speedup"])
    with gzip.open(next((tmp_path / "out").glob("study-quick-runs-*.jsonl.gz")), "rt") as f:
        rows = [json.loads(line) for line in f]
    for row in rows:
        assert_yardsticks(row["yardsticks"])
        assert row["speedups_vs_library"][-1] == row["yardsticks"]["speedup_vs_library"]
        assert row["yardsticks"]["speedup_vs_naive"] == pytest.approx(row["speedups"][-1])
    logged = (tmp_path / "out").glob("study-quick-retrievals-*.jsonl")
    entries = [json.loads(line) for path in logged for line in path.read_text().splitlines()]
    assert entries and all(e["neighbours"] is not None for e in entries)
    assert any(n["label"].startswith(("matmul:", "softmax:")) for e in entries for n in e["neighbours"])


def _start(task: Task) -> State:
    """A measured baseline state of `task` at its first instance, as a query starts from."""
    return State(task.name, task.instances[0].name, config_key(task.baseline_config), 1e6,
                 {"time_ns": 1e6, "flops": 1e6, "bytes": 1e6, "instructions": 1e6, "d1_miss_rate": 0.1,
                  "ll_miss_rate": 0.1, "ll_miss_bytes": 1e3, "cpu_utilization": 0.5, "threads": 1.0},
                 "cpu_cachegrind", {}, None, "", (0.0, 0.0, 0.0))  # fmt: skip


class RecordingRetrieval:
    """A client that keeps every retrieve request and answers nothing found."""

    def __init__(self) -> None:
        self.requests: list[RetrieveRequest] = []

    def retrieve(self, request: RetrieveRequest) -> RetrieveResponse:
        self.requests.append(request)
        return arms.empty_response(request.target, request.mode)


def test_the_study_retrieves_within_the_querys_vocabulary() -> None:
    """Every study query sends its task's vocabulary, the proposers' definition (agent/vocabulary.py)."""
    tasks = {name: get_task(name) for name in ("softmax", "matmul")}
    unit = arms.Unit("instance", "A", "B", "softmax", "16x256")
    start = _start(tasks["softmax"])
    client = RecordingRetrieval()
    target = get_target("cpu-x86-64-v2", measure=False)
    for mode in protocol.RETRIEVAL_MODES:
        arms.retrieve_for(client, unit, mode, tasks, start, target, 5)  # type: ignore[arg-type]
    assert {r.mode for r in client.requests} == set(protocol.RETRIEVAL_MODES)
    for request in client.requests:
        assert request.transforms == query_vocabulary(tasks["softmax"])


def test_every_retrieving_arm_gets_the_evidence_it_retrieved() -> None:
    """A bandit arm's proposer reads the response retrieved for its run (arms.FixedEvidence): its own
    request must validate in every mode, or the arm silently runs without evidence (the label arm did,
    once the request model checked each mode's needs)."""
    evidence = RetrievedTransform(
        transform="vectorize", score=0.3, attempts=4, successes=3, success_rate=0.75, weighted_log_speedup=0.4,
        confidence=0.8, evidence_weight=4.0, mean_similarity=1.0, same_target_attempts=4, other_target_attempts=0,
        best_speedup=1.6, best_example=None, params=[], evidence_measurement_ids=[], evidence_attempt_keys=[],
    )  # fmt: skip
    task = get_task("softmax")
    context = ProposalContext(
        task=task, backend=None, target=get_target("cpu-x86-64-v2", measure=False),  # type: ignore[arg-type]
        config=task.baseline_config, source=task.source("c", task.baseline_config),
        profile=arms.start_profile(_start(task)),
    )  # fmt: skip
    for mode in protocol.RETRIEVAL_MODES:
        response = arms.empty_response("cpu-x86-64-v2", mode).model_copy(update={"transforms": [evidence]})
        proposer = ExperienceProposer(arms.FixedEvidence(response), mode=mode)  # type: ignore[arg-type]
        assert set(proposer.retrieve(context)) == {"vectorize"}, mode
