"""The shipped vocabulary and `kernelgraph tasks show`: what an agent we did not write needs to write a
kernel without reading the task's module (its C signature, baseline source and instances)."""

from __future__ import annotations

import json
import re

import pytest
from typer.testing import CliRunner

from kernelgraph.agent.tasks import all_tasks
from kernelgraph.agent.transforms import Transform
from kernelgraph.agent.vocabulary import c_signature, shipped_vocabulary
from kernelgraph.cli import app


def _normalised(prototype: str) -> str:
    return (
        re.sub(r"\s+", " ", prototype.replace("restrict", "")).replace(" *", "*").replace("( ", "(").strip()
    )


@pytest.mark.parametrize("task", all_tasks("c"), ids=lambda t: t.name)
def test_the_c_signature_is_the_baseline_s(task) -> None:  # type: ignore[no-untyped-def]
    source = task.source("c", task.baseline_config)
    match = re.search(r"void\s+kernel\s*\(([^)]*)\)", source)
    assert match, f"{task.name}: the baseline exports no kernel(...)"
    defined = _normalised(f"void kernel({match.group(1)});")
    assert _normalised(c_signature(task)) == defined


def test_the_vocabulary_names_every_transform_and_task() -> None:
    vocabulary = shipped_vocabulary()
    assert [t["name"] for t in vocabulary["transforms"]] == [t.value for t in Transform]
    assert all(t["description"] for t in vocabulary["transforms"])
    names = {t["name"] for t in vocabulary["transforms"]}
    for task in vocabulary["tasks"]:
        assert task["family"] in vocabulary["families"] and set(task["patterns"]) <= set(
            vocabulary["patterns"]
        )
        for backend, transforms in task["transforms"].items():
            assert backend in vocabulary["backends"] and set(transforms) <= names, task["name"]
    softmax = next(t for t in vocabulary["tasks"] if t["name"] == "softmax")
    assert softmax["backends"] == ["c", "triton"] and softmax["instances"]


def test_tasks_show_prints_signature_baseline_and_instances() -> None:
    result = CliRunner().invoke(app, ["tasks", "show", "rmsnorm", "--json"])
    assert result.exit_code == 0, result.output
    shown = json.loads(result.stdout)
    assert shown["c_signature"] == "void kernel(const float* x, const float* w, float* y, int r, int c);"
    assert "void kernel(" in shown["baseline_source"] and shown["instances"][0]["name"]
    text = CliRunner().invoke(app, ["tasks", "show", "rmsnorm"])
    assert text.exit_code == 0 and "C signature: void kernel(const float* x" in text.stdout
    assert "instances: 16x512 (L1)" in text.stdout
    unknown = CliRunner().invoke(app, ["tasks", "show", "no_such_task"])
    assert unknown.exit_code == 2 and "unknown task" in unknown.stderr
