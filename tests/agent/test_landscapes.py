"""Task instances and landscape measurement: the same source at every size, resumable, every point
with its time and load."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from kernelgraph.agent.targets import get_target
from kernelgraph.agent.tasks import get_task
from kernelgraph.bench import landscapes
from tests.agent.yardstick_checks import assert_yardsticks


def test_an_instance_times_its_own_shape_and_checks_the_small_one() -> None:
    task = get_task("matvec")
    wide = task.at("128x16384")
    assert wide.instance == "128x16384"
    assert wide.make_inputs(1, False)["a"].shape == (128, 16384)
    assert wide.make_inputs(1, True)["a"].shape == task.make_inputs(1, True)["a"].shape  # odd sizes
    assert wide.source("c", task.baseline_config) == task.source("c", task.baseline_config)
    assert wide.sizes(wide.make_inputs(1, False)) == {"m": 128, "n": 16384}


def test_an_unknown_instance_names_the_known_ones() -> None:
    with pytest.raises(KeyError, match="its instances: 48, 112, 208, 1024"):
        get_task("matmul").at("512")


def test_study_instances_span_regimes() -> None:
    for name in ("matmul", "transpose", "matvec", "softmax", "elementwise_chain", "reduction", "layernorm"):
        task = get_task(name)
        assert len(task.instances) >= 3, name
        assert task.instances[0].regime == "L1" and task.instances[-1].regime in ("L2", "LLC"), name


def test_landscape_is_measured_once_and_resumed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    task = get_task("reduction")
    task = replace(task, instances=task.instances[:2])  # L1 and L2 sizes: fast
    configs = landscapes.space(task)[:2]
    monkeypatch.setattr(landscapes, "space", lambda t: configs)
    target = get_target("cpu-x86-64-v2")

    path = landscapes.measure_landscape(task, target, tmp_path, "A")
    header, points = landscapes.read_landscape(path)
    assert header["task"] == "reduction" and header["configs"] == 2 and header["host"]
    assert {(p.config, p.instance) for p in points} == {
        (landscapes.config_key(c), i.name) for c in configs for i in task.instances
    }
    assert all(p.outcome == "kept" and p.median_ns and p.median_ns > 0 and p.trials >= 7 for p in points)
    assert all(len(p.load_average) == 3 and p.measured_at for p in points)
    # The larger instance takes longer for the same config: the instance's size is what was timed.
    base = landscapes.config_key(configs[0])
    times = {p.instance: p.median_ns for p in points if p.config == base}
    assert times["262144"] > 4 * times["8192"]
    # Each instance's best beside its naive baseline, the library call (timed once per instance) and the roofline.
    for instance, (_, best_ns) in landscapes.best_by_instance(points).items():
        marks = landscapes.landscape_yardsticks(task, target, instance, best_ns, times[instance])
        assert_yardsticks(marks.to_json())
        assert marks.speedup_vs_naive is not None and marks.speedup_vs_naive >= 1.0

    # A torn last line (a killed run) is dropped and that point measured again; nothing else is.
    text = path.read_text()
    path.write_text(text[: text.rstrip("\n").rfind("\n") + 1] + '{"config": "trunc')
    landscapes.measure_landscape(task, target, tmp_path, "A")
    _, again = landscapes.read_landscape(path)
    assert len(again) == len(points)
    assert [json.loads(line)["kind"] for line in path.read_text().splitlines() if "header" in line] == [
        "header",
        "header",
    ]
