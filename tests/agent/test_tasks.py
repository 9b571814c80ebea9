"""Every task: baseline correct, transforms apply or return None, distinct configs render distinct C."""

from __future__ import annotations

import itertools
import random
from collections.abc import Iterator, Mapping
from typing import Any

import numpy as np
import pytest

from kernelgraph.agent.backends.c import CBackend
from kernelgraph.agent.targets import Target
from kernelgraph.agent.tasks import (
    NoRendererError,
    Renderer,
    UnknownTaskError,
    all_tasks,
    definition,
    get_task,
)
from kernelgraph.agent.tasks._common import config_space, iter_configs, sample_configs
from kernelgraph.agent.tasks.base import Config, Task
from kernelgraph.agent.transforms import Transform

TASKS = all_tasks("c")
NAMES = [t.name for t in TASKS]


def _params(spec_params: Mapping[str, tuple[Any, ...]]) -> Iterator[dict[str, Any]]:
    keys = list(spec_params)
    for values in itertools.product(*(spec_params[k] for k in keys)):
        yield dict(zip(keys, values, strict=True))


# Spaces up to this size are checked whole; a larger one (matmul's) on this many BFS-first configs
# plus a seeded random-walk sample reaching its deep corners.
CHECKED_CONFIGS = 400


def _reachable(task: Task) -> list[Config]:
    """The configs checked: the whole space when small, else its BFS-first and a deep random sample."""
    space = config_space(task.baseline_config, task.transforms, CHECKED_CONFIGS)
    if space.complete:
        return space.configs
    deep = sample_configs(task.baseline_config, task.transforms, CHECKED_CONFIGS, seed=task.name)
    known = {repr(sorted(c.items())) for c in space.configs}
    return space.configs + [c for c in deep if repr(sorted(c.items())) not in known]


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


def test_every_backend_shares_the_one_task_definition() -> None:
    """A Triton task measures against the definition's own inputs, reference and roofline counts:
    the very same functions as the C task of that name, never a copy."""
    for triton_task in all_tasks("triton"):
        defined = definition(triton_task.name)
        for part in ("make_inputs", "reference", "output_shapes", "flops", "bytes_moved"):
            assert getattr(triton_task, part) is getattr(defined, part), (triton_task.name, part)
        if triton_task.name in {t.name for t in all_tasks("c")}:
            assert triton_task.reference is get_task(triton_task.name, "c").reference
    layernorm = get_task("layernorm", "triton")
    source = layernorm.source("triton", layernorm.baseline_config)
    assert "def launch(x, gamma, beta, y)" in source  # the definition's input names, on both backends


def test_a_task_without_a_renderer_for_a_backend_fails_loudly() -> None:
    with pytest.raises(NoRendererError, match="'stencil2d' has no renderer for backend 'triton'"):
        get_task("stencil2d", "triton")
    with pytest.raises(NoRendererError, match="'elementwise' has no renderer for backend 'c'"):
        get_task("elementwise", "c")
    with pytest.raises(NoRendererError):
        get_task("matmul", "c").source("triton", {})


def test_a_renderer_for_an_undefined_task_is_a_registry_error() -> None:
    orphan = Renderer("no_such_task", "triton", lambda config: "", {}, ())
    with pytest.raises(UnknownTaskError):
        definition(orphan.task).with_renderer(orphan)
    with pytest.raises(ValueError, match="cannot render task 'matmul'"):
        definition("matmul").with_renderer(orphan)


@pytest.mark.parametrize("task", TASKS, ids=NAMES)
def test_transforms_apply_or_return_none(task: Task) -> None:
    vocabulary = {str(t) for t in Transform}
    assert {s.name for s in task.transforms} <= vocabulary
    configs = _reachable(task)
    # Big enough that K=8 random attempts rarely find the best config.
    assert len(configs) >= 50, f"{task.name}: {len(configs)} reachable configs"
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


@pytest.mark.parametrize("task", TASKS, ids=NAMES)
def test_random_reachable_configs_pass_check(task: Task, backend: CBackend, cpu_target: Target) -> None:
    """A seeded sample of reachable configs compiles without warnings and is correct on small inputs."""
    configs = _reachable(task)[1:]
    for config in random.Random(f"sample-{task.name}").sample(configs, 5):
        source = task.source("c", config)
        built = backend.compile(task, source, cpu_target)
        assert built.ok and not built.diagnostics, f"{task.name} {dict(config)}: {built.diagnosis}"
        result = backend.check(task, source, cpu_target)
        assert result.correct, f"{task.name} {dict(config)}: {result.outcome} {result.reason}"


def test_a_space_larger_than_its_limit_says_so() -> None:
    """The first configs in BFS order are a prefix of the lazy enumeration, and never pass for the whole."""
    matmul = get_task("matmul")
    small = config_space(matmul.baseline_config, matmul.transforms, limit=100)
    assert not small.complete and len(small.configs) == 100 and "larger than 100" in small.describe()
    lazy = list(itertools.islice(iter_configs(matmul.baseline_config, matmul.transforms), 100))
    assert lazy == small.configs
    reduction = get_task("reduction")
    whole = config_space(reduction.baseline_config, reduction.transforms, limit=5000)
    assert whole.complete and len(whole.configs) < 5000


def test_matmul_space_reaches_the_packed_register_blocked_kernel() -> None:
    """From the loop nest, register block -> vector width -> pack -> threads reach the BLAS-style kernel."""
    matmul = get_task("matmul")
    by_name = {s.name: s for s in matmul.transforms}
    config = matmul.baseline_config
    for name, params in [("register_block", {"mr": 6, "nv": 2}), ("vector_width", {"width": 16}),
                         ("pack", {}), ("parallelize", {}), ("partition_threads", {"partition": "jr"})]:  # fmt: skip
        new = by_name[name].apply(config, params)
        assert new is not None, name
        config = new
    source = matmul.source("c", config)
    assert "vector_size(64)" in source and "bpack" in source and "micro(" in source
    assert by_name["register_block"].apply(config, {"mr": 14, "nv": 4}) is None  # 56 accumulators spill


def reachable_counts() -> dict[str, int]:
    """Reachable configs per task: `python -m tests.agent.test_tasks` prints them."""
    return {t.name: len(list(iter_configs(t.baseline_config, t.transforms))) for t in TASKS}


@pytest.mark.parametrize("size", [0, 1, 40_009, (1 << 18) + 3, 8 * 1024 * 1024])
def test_the_histograms_reference_counts_every_value_in_its_bin(size: int) -> None:
    """The reference counts bins two values at a time (a table of pairs, for speed): it must give
    each value's own bin, floor(x * 256), odd counts and chunk tails included, for the task's skewed
    values, its edge set (k / 256 and 0.999999) and the float32 just below 1 (bin 255)."""
    from kernelgraph.agent.tasks import histogram

    values = histogram.inputs_at(5, (size,))
    below_one = {
        "x": np.where(np.arange(size) % 3 == 0, np.nextafter(np.float32(1), np.float32(0)), values["x"])
    }
    for inputs in (values, histogram.edge_inputs(values), below_one):
        x = inputs["x"].astype(np.float64)  # the bins computed in another precision: every k / 256 is exact
        want = np.bincount(np.floor(x * histogram.BINS).astype(np.int64), minlength=histogram.BINS)
        got = histogram.reference(inputs)["hist"]
        assert got.dtype == np.int32 and got.tolist() == want.tolist()


if __name__ == "__main__":
    for name, count in reachable_counts().items():
        print(f"{name:20s} {count}")
