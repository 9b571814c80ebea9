"""What a kernel task is: see docs/adding-a-task.md.

A task is defined once (agent/tasks/<module>.py): its input generator, numpy reference and roofline
counts (FLOPs, bytes). A backend contributes a *config space* and a renderer: a kernel variant is a
config (a dict of knobs) that the backend's renderer turns into real source. The C renderer lives in
the definition's module; every other backend registers a `Renderer` for the task by name
(agent/tasks/triton/). A transform from the shared vocabulary (agent/transforms.py) maps a config to
a new config; the shared vocabulary is what lets experience transfer between kernels.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

Config = Mapping[str, Any]
Arrays = dict[str, np.ndarray]


@dataclass(frozen=True)
class Tolerance:
    """An output value is correct when |got - want| <= rtol * |want| + floor * scale, where `scale` is
    the output's magnitude (`Task.error_scale`; by default the RMS of the whole output). The floor is
    relative, so it sits far below the values themselves: writing 0 where the true value is small is
    an error of the whole value, far above it (an absolute 1e-4 accepted zeros for softmax outputs
    below 1e-4, 55% of them)."""

    rtol: float
    floor: float


DEFAULT_TOLERANCES: Mapping[str, Tolerance] = {
    "float32": Tolerance(rtol=1e-4, floor=1e-5),
    "float16": Tolerance(rtol=1e-2, floor=1e-3),
    "bfloat16": Tolerance(rtol=1e-2, floor=1e-3),
}


def rms_scale(want: np.ndarray) -> np.ndarray:
    """The default magnitude of an output: the RMS of all its values (a scalar array)."""
    w = np.asarray(want, dtype="f8")
    return np.asarray(np.sqrt(np.mean(w * w)) if w.size else 0.0)


@dataclass(frozen=True)
class TransformSpec:
    """One transform of the shared vocabulary as it applies to this task.

    `params` lists the choices for each parameter; `apply(config, params)` returns the new config,
    or None when the transform does not apply in that state (e.g. already parallel).
    """

    name: str
    params: Mapping[str, tuple[Any, ...]]
    apply: Callable[[Config, Mapping[str, Any]], Config | None]
    description: str = ""


@dataclass(frozen=True)
class Renderer:
    """One backend's side of a task defined elsewhere: its config space and the source of a config.

    It names its task and never carries inputs, a reference or roofline counts: those belong to the
    task definition alone, so every backend checks and measures against the same numpy side.
    """

    task: str  # the name of the task definition this renders
    backend: str
    render: Callable[[Config], str]
    baseline_config: Config
    transforms: tuple[TransformSpec, ...]


class UnknownTaskError(KeyError):
    """No task by that name for that backend; the message lists the known names."""

    def __init__(self, name: str, backend: str, known: list[str]) -> None:
        self.name, self.backend, self.known = name, backend, known
        super().__init__(name)

    def __str__(self) -> str:
        return f"unknown task {self.name!r} for backend {self.backend!r}; known: {', '.join(self.known)}"


class NoRendererError(UnknownTaskError):
    """The task is defined, but that backend registers no renderer for it."""

    def __str__(self) -> str:
        known = f"; tasks it renders: {', '.join(self.known)}" if self.known else ""
        return f"task {self.name!r} has no renderer for backend {self.backend!r}{known}"


Shape = tuple[int, ...]


@dataclass(frozen=True)
class LibraryCall:
    """The one call a user would make instead of writing this task's kernel (agent/library.py times
    it, in its own sandboxed process, beside every kernel of the task).

    `torch(torch, tensors)` is torch CPU eager, used where torch is installed; `numpy(arrays)` is the
    fallback. Each takes the task's named inputs and returns its named outputs (any dtype or shape
    that converts to the task's outputs without arithmetic: a 0-d sum, int64 counts). `torch_call`
    and `numpy_call` say the call in words for reports ("torch.mm(a, b)").
    """

    numpy: Callable[[Arrays], Mapping[str, Any]]
    numpy_call: str
    torch: Callable[[Any, Mapping[str, Any]], Mapping[str, Any]] | None = None
    torch_call: str = ""


@dataclass(frozen=True)
class Instance:
    """One problem size of a task. The source is the same at every size (sizes are run-time `int`
    arguments), so only a measurement can tell two instances apart (docs/study.md)."""

    name: str  # e.g. "512x768"
    shape: Shape  # what the task's `inputs_at` takes
    regime: str  # where the working set sits on the study host: "L1", "L2" or "LLC"


@dataclass(frozen=True)
class Task:
    """A task as one backend sees it: the definition's numpy side plus that backend's config space.

    A definition module builds it with the C config space (or none, `render={}`, for a task only
    another backend renders); `with_renderer` swaps in another backend's.
    """

    name: str
    family: str  # access-pattern family: dense-matmul, row-reduction, stencil, scan, scatter, gather, ...
    patterns: tuple[str, ...]  # AccessPattern names the kernels of this task exhibit
    description: str
    dtype: str
    make_inputs: Callable[[int, bool], Arrays]  # (seed, small) -> named input arrays
    output_shapes: Callable[[Arrays], Mapping[str, tuple[int, ...]]]
    reference: Callable[[Arrays], Arrays]
    flops: Callable[[Arrays], float]
    bytes_moved: Callable[[Arrays], float]  # compulsory traffic, for the memory roofline
    baseline_config: Config
    transforms: tuple[TransformSpec, ...]
    render: Mapping[str, Callable[[Config], str]]  # backend name -> config -> source
    tolerances: Mapping[str, Tolerance] = field(default_factory=lambda: dict(DEFAULT_TOLERANCES))
    # Per output, the magnitude an element's absolute error is measured against (broadcastable to
    # the output): for sums, the sum of the terms' absolute values, so that an honest reordered sum
    # that lands near zero still passes. None: `rms_scale` of the reference output.
    error_scale: Callable[[Arrays], Mapping[str, np.ndarray]] | None = None
    # An input set at the edge of the task's domain, made from a regular set (same shapes): every
    # check verifies it beside the random sets (softmax logits around +-80 catch a missing
    # max-subtraction).
    edge_inputs: Callable[[Arrays], Arrays] | None = None
    # The C ABI's trailing `int` arguments, in order (docs/adding-a-task.md); empty when none.
    sizes: Callable[[Arrays], Mapping[str, int]] = field(default=lambda inputs: {})
    # Output dtypes that differ from `dtype` (e.g. a histogram's int32 counts); others use `dtype`.
    output_dtypes: Mapping[str, str] = field(default_factory=dict)
    # Inputs of any shape (`make_inputs` is this at the task's small and full shapes), the
    # instances the study measures, and which one this Task object times ("" = the full shape).
    inputs_at: Callable[[int, Shape], Arrays] | None = None
    instances: tuple[Instance, ...] = ()
    instance: str = ""
    # What a user would call instead (the library baseline every kernel is quoted beside); None only
    # where no library has the operation.
    library: LibraryCall | None = None
    # Rows `rows` (sorted, distinct indices along every output's leading axis) of `reference(inputs)`,
    # computed without the whole reference: what the isolated timing protocol checks on every timed
    # call (agent/backends/isolated.py `row_reference`). None: the evaluator finds a row slicing of
    # the inputs itself when the reference is row-separable, else checks the whole reference.
    row_reference: Callable[[Arrays, np.ndarray], Mapping[str, np.ndarray]] | None = None

    @property
    def tolerance(self) -> Tolerance:
        return self.tolerances[self.dtype]

    def output_dtype(self, name: str) -> str:
        return self.output_dtypes.get(name, self.dtype)

    def source(self, backend: str, config: Config) -> str:
        if backend not in self.render:
            raise NoRendererError(self.name, backend, [])
        return self.render[backend](config)

    def instance_named(self, name: str) -> Instance:
        for candidate in self.instances:
            if candidate.name == name:
                return candidate
        known = ", ".join(i.name for i in self.instances) or "none"
        raise KeyError(f"task {self.name!r} has no instance {name!r}; its instances: {known}")

    def at(self, instance: Instance | str) -> Task:
        """This task timed at `instance`'s shape; correctness is still checked on the small inputs
        (whose odd sizes exercise edge handling)."""
        chosen = self.instance_named(instance) if isinstance(instance, str) else instance
        inputs_at = self.inputs_at
        if inputs_at is None:
            raise ValueError(f"task {self.name!r} defines no inputs_at, so it has no instances")
        small_inputs = self.make_inputs

        def make_inputs(seed: int, small: bool) -> Arrays:
            return small_inputs(seed, True) if small else inputs_at(seed, chosen.shape)

        return replace(self, make_inputs=make_inputs, instance=chosen.name)

    def with_renderer(self, renderer: Renderer) -> Task:
        """This task as `renderer`'s backend sees it: the same inputs, reference and roofline counts
        (the very same functions), with that backend's config space and renderer."""
        if renderer.task != self.name:
            raise ValueError(f"a renderer for task {renderer.task!r} cannot render task {self.name!r}")
        return replace(
            self,
            baseline_config=dict(renderer.baseline_config),
            transforms=renderer.transforms,
            render={renderer.backend: renderer.render},
        )
