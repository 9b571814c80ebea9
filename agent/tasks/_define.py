"""How a task module registers its definition: `define_task(...)` and the roofline/ABI counts most
tasks share. A task module keeps what is its own (its numbers, names, shapes, reference maths and
kernel sources) and passes it here; the wiring (inputs at the small and full shapes, the C renderer,
the fp32 default) is written once."""

from __future__ import annotations

from collections.abc import Callable, Mapping

import numpy as np

from kernelgraph.agent.tasks._common import EDGE_SEED, f32, rng
from kernelgraph.agent.tasks.base import Arrays, Config, Instance, LibraryCall, Shape, Task, TransformSpec

Count = Callable[[Arrays], float]


def per_element(name: str, count: float) -> Count:
    """`count` per element of input `name` (FLOPs or bytes of a streaming task)."""
    return lambda inputs: count * inputs[name].size


def dims(name: str, *sizes: str) -> Callable[[Arrays], Mapping[str, int]]:
    """The C ABI's trailing `int` arguments: input `name`'s dimensions, named `sizes` in order."""
    return lambda inputs: dict(zip(sizes, inputs[name].shape, strict=True))


def shaped_like(name: str, *outputs: str) -> Callable[[Arrays], Mapping[str, tuple[int, ...]]]:
    """Outputs of input `name`'s shape (elementwise and row-wise tasks)."""
    return lambda inputs: {output: inputs[name].shape for output in outputs}


def signed_wide(shape: tuple[int, ...], seed: int = EDGE_SEED) -> np.ndarray:
    """Values of random sign and magnitudes from 2^-10 to 2^10: sums of them cancel, so honest
    reordered sums land near zero while their terms are large."""
    g = rng(seed)
    return f32(g.choice([-1.0, 1.0], shape) * np.exp2(g.uniform(-10, 10, shape)))


def abs_products(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """|a| @ |b| in float64: the magnitude of each product sum's terms (the error scale of a matmul)."""
    return np.abs(a.astype("f8")) @ np.abs(b.astype("f8"))


def signed_wide_inputs(*names: str) -> Callable[[Arrays], Arrays]:
    """An edge set for sums: inputs `names` (the k-th drawn from EDGE_SEED + k) of random sign and
    magnitudes 2^-10..2^10, so that honest reordered sums cancel to near zero; other inputs kept."""

    def edge_inputs(inputs: Arrays) -> Arrays:
        return {**inputs, **{n: signed_wide(inputs[n].shape, EDGE_SEED + k) for k, n in enumerate(names)}}

    return edge_inputs


def product_sums_scale(output: str, a: str, b: str) -> Callable[[Arrays], dict[str, np.ndarray]]:
    """The error scale of `output` = `a` @ `b`: |a| @ |b|, the magnitude of each sum's terms."""
    return lambda inputs: {output: abs_products(inputs[a], inputs[b])}


def define_task(
    *,
    name: str,
    family: str,
    patterns: tuple[str, ...],
    description: str,
    inputs_at: Callable[[int, Shape], Arrays],
    small: Shape,
    full: Shape,
    output_shapes: Callable[[Arrays], Mapping[str, tuple[int, ...]]],
    reference: Callable[[Arrays], Arrays],
    flops: Count,
    bytes_moved: Count,
    baseline_config: Config,
    transforms: tuple[TransformSpec, ...],
    render_c: Callable[[Config], str] | None,
    sizes: Callable[[Arrays], Mapping[str, int]] = lambda inputs: {},
    edge_inputs: Callable[[Arrays], Arrays] | None = None,
    error_scale: Callable[[Arrays], Mapping[str, np.ndarray]] | None = None,
    library: LibraryCall | None = None,
    instances: tuple[Instance, ...] = (),
    output_dtypes: Mapping[str, str] | None = None,
    row_reference: Callable[[Arrays, np.ndarray], Mapping[str, np.ndarray]] | None = None,
) -> Task:
    """A float32 task whose inputs at any shape come from `inputs_at` (`make_inputs` is it at the
    `small` and `full` shapes) and whose C source comes from `render_c` (None: another backend
    renders it, and the C config space is empty)."""

    def make_inputs(seed: int, is_small: bool) -> Arrays:
        return inputs_at(seed, small if is_small else full)

    return Task(
        name=name,
        family=family,
        patterns=patterns,
        description=description,
        dtype="float32",
        make_inputs=make_inputs,
        output_shapes=output_shapes,
        reference=reference,
        flops=flops,
        bytes_moved=bytes_moved,
        baseline_config=baseline_config,
        transforms=transforms,
        render={"c": render_c} if render_c else {},
        error_scale=error_scale,
        edge_inputs=edge_inputs,
        sizes=sizes,
        output_dtypes=dict(output_dtypes or {}),
        inputs_at=inputs_at,
        instances=instances,
        library=library,
        row_reference=row_reference,
    )
