"""What a kernel task is: see docs/adding-a-task.md.

A task owns a numpy reference, an input generator, its roofline counts, and a *config space*:
a kernel variant is a config (a dict of knobs) that the task renders into real source for a
backend. A transform from the shared vocabulary (agent/transforms.py) maps a config to a new
config; the shared vocabulary is what lets experience transfer between kernels.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

Config = Mapping[str, Any]
Arrays = dict[str, np.ndarray]


@dataclass(frozen=True)
class Tolerance:
    rtol: float
    atol: float


DEFAULT_TOLERANCES: Mapping[str, Tolerance] = {
    "float32": Tolerance(rtol=1e-4, atol=1e-4),
    "float16": Tolerance(rtol=1e-2, atol=1e-2),
    "bfloat16": Tolerance(rtol=1e-2, atol=1e-2),
}


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
class Task:
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
    # The C ABI's trailing `int` arguments, in order (docs/adding-a-task.md); empty when none.
    sizes: Callable[[Arrays], Mapping[str, int]] = field(default=lambda inputs: {})
    # Output dtypes that differ from `dtype` (e.g. a histogram's int32 counts); others use `dtype`.
    output_dtypes: Mapping[str, str] = field(default_factory=dict)

    @property
    def tolerance(self) -> Tolerance:
        return self.tolerances[self.dtype]

    def output_dtype(self, name: str) -> str:
        return self.output_dtypes.get(name, self.dtype)

    def source(self, backend: str, config: Config) -> str:
        return self.render[backend](config)
