"""Helpers shared by the task modules: config edits, transform factories and C snippets."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from agent.tasks.base import Config, TransformSpec
from agent.transforms import Transform

C_PRELUDE = "#include <math.h>\n#include <stdlib.h>\n#include <string.h>\n#include <omp.h>\n\n"


def with_(config: Config, **changes: Any) -> Config | None:
    """The config with `changes` applied, or None when nothing changes (the transform does not apply)."""
    if all(config.get(key) == value for key, value in changes.items()):
        return None
    return {**config, **changes}


def set_knob(
    transform: Transform,
    key: str,
    choices: tuple[Any, ...],
    *,
    requires: Callable[[Config], bool] | None = None,
    description: str = "",
) -> TransformSpec:
    """A transform that sets knob `key` to the chosen value; None if already there or not allowed."""

    def apply(config: Config, params: Mapping[str, Any]) -> Config | None:
        if requires is not None and not requires(config):
            return None
        value = params.get(key, choices[0])
        if value not in choices:
            return None
        return with_(config, **{key: value})

    return TransformSpec(
        name=str(transform),
        params={key: choices},
        apply=apply,
        description=description or transform.description,
    )


def turn_on(
    transform: Transform,
    key: str,
    *,
    requires: Callable[[Config], bool] | None = None,
    description: str = "",
) -> TransformSpec:
    """A parameterless transform that switches boolean knob `key` on."""

    def apply(config: Config, params: Mapping[str, Any]) -> Config | None:
        if requires is not None and not requires(config):
            return None
        return with_(config, **{key: True})

    return TransformSpec(
        name=str(transform), params={}, apply=apply, description=description or transform.description
    )


def omp_for(config: Config, schedule: str = "static") -> str:
    """An OpenMP parallel-for line when the config is parallel, else nothing."""
    if not config.get("parallel"):
        return ""
    return f"#pragma omp parallel for schedule({schedule})\n"


def simd(config: Config, reduction: str = "") -> str:
    """A `#pragma omp simd` line (with a reduction clause) when the config vectorizes."""
    if not config.get("simd"):
        return ""
    return f"#pragma omp simd{f' reduction({reduction})' if reduction else ''}\n"


def unroll(config: Config, key: str = "unroll") -> str:
    factor = int(config.get(key, 1))
    return f"#pragma GCC unroll {factor}\n" if factor > 1 else ""


def indent(text: str, spaces: int) -> str:
    pad = " " * spaces
    return "".join(pad + line if line.strip() else line for line in text.splitlines(keepends=True))


def rng(seed: int) -> np.random.Generator:
    return np.random.default_rng(seed)


def f32(array: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(array, dtype=np.float32)


def par_simd(config: Config, reduction: str = "") -> str:
    """The pragma for one loop that may be both parallel and SIMD (gcc takes one pragma per loop)."""
    red = f" reduction({reduction})" if reduction else ""
    if config.get("parallel") and config.get("simd"):
        return f"#pragma omp parallel for simd schedule(static){red}\n"
    if config.get("parallel"):
        return f"#pragma omp parallel for schedule(static){red}\n"
    return simd(config, reduction)
