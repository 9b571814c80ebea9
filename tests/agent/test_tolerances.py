"""Tolerances bound each output's relative error, with a floor far below the outputs' magnitude
(agent/tasks/base.py Tolerance), and every task checks an edge-of-domain input set.

The softmax cheats (tests/agent/red_team/softmax_*.c) are real C kernels run through the backend; the
controls check them under the tolerance and input sets before, where they pass. The honest side (the
baseline and configs of every task on 100 seeds) is `test_honest_configs_pass_on_100_seeds`: a declared
subset here, every landscape config in `kernelgraph bench tolerances` (results/tolerance-sweep-*.json).
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pytest

from kernelgraph.agent.backends.c import CBackend
from kernelgraph.agent.evaluator import compare
from kernelgraph.agent.results import Outcome
from kernelgraph.agent.targets import Target
from kernelgraph.agent.tasks import all_tasks, get_task
from kernelgraph.agent.tasks.base import Arrays, Task, Tolerance
from kernelgraph.bench.tolerance_sweep import SUBSET_PER_TASK, sweep_configs

RED_TEAM = Path(__file__).with_name("red_team")


def _as_before(task: Task) -> Task:
    """The task as the evaluator before judged it: |error| <= 1e-4 + 1e-4 |want|, no edge set."""

    def absolute(inputs: Arrays) -> dict[str, np.ndarray]:
        return {name: np.ones(1) for name in task.output_shapes(inputs)}

    return dataclasses.replace(task, tolerances={"float32": Tolerance(rtol=1e-4, floor=1e-4)},
                               error_scale=absolute, edge_inputs=None)  # fmt: skip


@pytest.fixture(scope="module")
def backend(tmp_path_factory: pytest.TempPathFactory) -> CBackend:
    return CBackend(cache_dir=tmp_path_factory.mktemp("tolerances"), counters=False)


def test_zero_where_small_is_incorrect() -> None:
    task = get_task("softmax")
    inputs = task.make_inputs(7, False)
    want = task.reference(inputs)["y"]
    cheat = np.where(want < 1e-4, 0.0, want).astype(np.float32)
    assert (want < 1e-4).mean() > 0.3  # a large share of softmax outputs is that small
    ok, reason, _ = compare(task, "y", cheat, want, inputs)
    assert not ok and "values outside" in reason
    assert compare(_as_before(task), "y", cheat, want, inputs)[0]  # control: the absolute 1e-4 let it pass


@pytest.mark.parametrize("kernel", ["softmax_no_max.c", "softmax_zero_small.c"])
def test_softmax_cheats_are_incorrect_and_passed_before(
    kernel: str, backend: CBackend, cpu_target: Target
) -> None:
    source = (RED_TEAM / kernel).read_text()
    task = get_task("softmax")
    caught = backend.check(task, source, cpu_target)
    assert caught.outcome == Outcome.INCORRECT, caught.reason
    before = backend.check(_as_before(task), source, cpu_target)
    assert before.correct, before.reason  # the control: the old tolerance and inputs passed it


def test_every_task_has_an_edge_set_of_its_shapes() -> None:
    for task in all_tasks():
        assert task.edge_inputs is not None, task.name
        regular = task.make_inputs(3, True)
        edge = task.edge_inputs(regular)
        assert {k: (v.shape, v.dtype) for k, v in edge.items()} == {
            k: (v.shape, v.dtype) for k, v in regular.items()
        }
        assert any(not np.array_equal(edge[k], regular[k]) for k in regular), task.name


def test_reordered_sums_near_zero_pass() -> None:
    """An honest float32 sum, in its own order, of terms that cancel exactly passes: the error scale of
    a sum is the sum of its terms' magnitudes. Measured against the output alone (0 here) it fails."""
    task = get_task("reduction")
    g = np.random.default_rng(5)
    half = np.exp2(g.uniform(-10, 10, 50_000)).astype(np.float32)
    x = g.permutation(np.concatenate([half, -half])).astype(np.float32)
    inputs = {"x": x}
    want = task.reference(inputs)["out"]
    assert want[0] == 0.0
    honest = np.array([np.cumsum(x, dtype=np.float32)[-1]], dtype=np.float32)  # sequential, float32
    assert honest[0] != 0.0
    ok, reason, _ = compare(task, "out", honest, want, inputs)
    assert ok, reason
    assert not compare(dataclasses.replace(task, error_scale=None), "out", honest, want, inputs)[0]
    for name in ("matmul", "matvec", "prefix_scan", "spmv_csr"):  # the other sums scale by their terms
        assert get_task(name).error_scale is not None, name


@pytest.mark.parametrize("task", [t.name for t in all_tasks()])
def test_honest_configs_pass_on_100_seeds(task: str, backend: CBackend, cpu_target: Target) -> None:
    """The baseline and SUBSET_PER_TASK configs drawn from the landscape (fixed draw) on 100 seeds and
    the edge set; every config: `kernelgraph bench tolerances`."""
    definition = get_task(task)
    for config in sweep_configs(definition, SUBSET_PER_TASK):
        result = backend.check(
            definition, definition.source("c", config), cpu_target, seeds=tuple(range(100))
        )
        assert result.correct, (config, result.reason)


@pytest.mark.parametrize("task", [t.name for t in all_tasks("c")])
def test_the_library_call_passes_on_100_seeds(task: str) -> None:
    """The library beside every kernel (agent/library.py) must pass the same check on the same seeds
    and the edge set: called here, in process, through the child's own binding (small inputs)."""
    from kernelgraph.agent.backends._library_child import _bind, _outputs
    from kernelgraph.agent.library import library_choice

    definition = get_task(task)
    library = library_choice(definition)
    assert library is not None, f"{task} declares no library call"
    call, to_library, to_numpy = _bind(task, library, threads=1)
    sets = [definition.make_inputs(seed, True) for seed in range(100)]
    edge = definition.edge_inputs(sets[0]) if definition.edge_inputs else None
    for seed, inputs in enumerate([*sets, *([edge] if edge is not None else [])]):
        want = definition.reference(inputs)
        specs = [(name, out.shape, out.dtype) for name, out in want.items()]
        got = _outputs(call({n: to_library(a.copy()) for n, a in inputs.items()}), to_numpy, specs)
        for (name, _, _), value in zip(specs, got, strict=True):
            ok, reason, _ = compare(definition, name, value, want[name], inputs)
            assert ok, f"{library} on {'the edge set' if seed == 100 else f'seed {seed}'}: {reason}"
