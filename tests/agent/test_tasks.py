"""Every task: baseline correct, transforms apply or return None, distinct configs render distinct C."""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Mapping
from typing import Any

import pytest

from agent.backends.c import CBackend
from agent.targets import Target
from agent.tasks import UnknownTaskError, all_tasks, get_task
from agent.tasks.base import Config, Task
from agent.transforms import Transform

TASKS = all_tasks("c")
NAMES = [t.name for t in TASKS]


def _params(spec_params: Mapping[str, tuple[Any, ...]]) -> Iterator[dict[str, Any]]:
    keys = list(spec_params)
    for values in itertools.product(*(spec_params[k] for k in keys)):
        yield dict(zip(keys, values, strict=True))


def _reachable(task: Task, depth: int = 2) -> list[Config]:
    seen = {repr(sorted(task.baseline_config.items())): task.baseline_config}
    frontier = [task.baseline_config]
    for _ in range(depth):
        nxt = []
        for config in frontier:
            for spec in task.transforms:
                for params in _params(spec.params):
                    new = spec.apply(config, params)
                    if new is not None and repr(sorted(new.items())) not in seen:
                        seen[repr(sorted(new.items()))] = new
                        nxt.append(new)
        frontier = nxt
    return list(seen.values())


def _everything(task: Task) -> Config:
    """Apply each transform once, first parameter choice, when it applies."""
    config = task.baseline_config
    for spec in task.transforms:
        new = spec.apply(config, {k: v[0] for k, v in spec.params.items()})
        config = new if new is not None else config
    return config


def test_registry_shape() -> None:
    assert len(TASKS) >= 12
    assert len({t.family for t in TASKS}) >= 5
    assert len(set(NAMES)) == len(NAMES)
    assert get_task("matmul").name == "matmul"


def test_unknown_task_lists_known_names() -> None:
    with pytest.raises(KeyError) as info:
        get_task("nope")
    assert isinstance(info.value, UnknownTaskError)
    assert "matmul" in str(info.value)


@pytest.mark.parametrize("task", TASKS, ids=NAMES)
def test_transforms_apply_or_return_none(task: Task) -> None:
    vocabulary = {str(t) for t in Transform}
    assert {s.name for s in task.transforms} <= vocabulary
    configs = _reachable(task)
    assert 4 <= len(configs) <= 200
    for config in configs:
        for spec in task.transforms:
            for params in _params(spec.params):
                new = spec.apply(config, params)
                assert new is None or (dict(new) != dict(config) and set(new) == set(config))
    sources = {task.source("c", c) for c in configs}
    assert len(sources) == len(configs), "two different configs rendered the same source"


@pytest.mark.parametrize("task", TASKS, ids=NAMES)
def test_inputs_vary_by_seed_not_shape(task: Task) -> None:
    a, b = task.make_inputs(1, True), task.make_inputs(2, True)
    assert [v.shape for v in a.values()] == [v.shape for v in b.values()]
    assert any((a[k] != b[k]).any() for k in a)


@pytest.mark.parametrize("task", TASKS, ids=NAMES)
def test_baseline_and_transformed_pass_check(task: Task, backend: CBackend, cpu_target: Target) -> None:
    for config in (task.baseline_config, _everything(task)):
        result = backend.check(task, task.source("c", config), cpu_target)
        assert result.correct, f"{task.name} {dict(config)}: {result.outcome} {result.reason}"
