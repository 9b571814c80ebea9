"""Helpers shared by the task modules: config edits, transform factories and C snippets."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from kernelgraph.agent.tasks.base import Config, TransformSpec
from kernelgraph.agent.transforms import Transform

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


# OpenMP schedules every task offers through the `schedule` transform. `dynamic,1` hands out one
# iteration at a time: fine for coarse rows, very costly on fine-grained element loops.
SCHEDULES: tuple[str, ...] = ("static", "dynamic,1", "dynamic,64", "guided")


def schedule_of(config: Config) -> str:
    return str(config.get("schedule", "static"))


def omp_for(config: Config, schedule: str | None = None) -> str:
    """An OpenMP parallel-for line when the config is parallel (its `schedule` knob), else nothing."""
    if not config.get("parallel"):
        return ""
    return f"#pragma omp parallel for schedule({schedule or schedule_of(config)})\n"


def parallelize(key: str = "parallel") -> TransformSpec:
    """Turn on OpenMP parallelism of the outer loop (boolean knob `key`)."""
    return turn_on(Transform.PARALLELIZE, key)


def schedule(choices: tuple[str, ...] = SCHEDULES, key: str = "parallel") -> TransformSpec:
    """Change the OpenMP schedule of the parallel loop; applies only once `key` is on."""
    return set_knob(Transform.SCHEDULE, "schedule", choices, requires=lambda c: bool(c.get(key)))


def simd(config: Config, reduction: str = "") -> str:
    """A `#pragma omp simd` line (with a reduction clause) when the config vectorizes."""
    if not config.get("simd"):
        return ""
    return f"#pragma omp simd{f' reduction({reduction})' if reduction else ''}\n"


def nt_store(config: Config, target: str, value: str) -> str:
    """`target = value;` or, with streaming stores on, a non-temporal MOVNTI of the float bits."""
    if config.get("stream"):
        return f"{{ float nt_v = {value}; int nt_b; memcpy(&nt_b, &nt_v, 4); _mm_stream_si32((int*)&{target}, nt_b); }}"
    return f"{target} = {value};"


def prelude(config: Config) -> str:
    """C_PRELUDE, plus the SSE intrinsics header when the config uses streaming stores."""
    return ("#include <immintrin.h>\n" if config.get("stream") else "") + C_PRELUDE


def nt_fence(config: Config) -> str:
    return "    _mm_sfence();\n" if config.get("stream") else ""


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


EDGE_SEED = 977  # edge-of-domain input sets are fixed: the same set on every check


def signed_wide(shape: tuple[int, ...], seed: int = EDGE_SEED) -> np.ndarray:
    """Values of random sign and magnitudes from 2^-10 to 2^10: sums of them cancel, so honest
    reordered sums land near zero while their terms are large."""
    g = rng(seed)
    return f32(g.choice([-1.0, 1.0], shape) * np.exp2(g.uniform(-10, 10, shape)))


def abs_products(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """|a| @ |b| in float64: the magnitude of each product sum's terms (the error scale of a matmul)."""
    return np.abs(a.astype("f8")) @ np.abs(b.astype("f8"))


def par_simd(config: Config, reduction: str = "") -> str:
    """The pragma for one loop that may be both parallel and SIMD (gcc takes one pragma per loop)."""
    red = f" reduction({reduction})" if reduction else ""
    sched = schedule_of(config)
    if config.get("parallel") and config.get("simd"):
        return f"#pragma omp parallel for simd schedule({sched}){red}\n"
    if config.get("parallel"):
        return f"#pragma omp parallel for schedule({sched}){red}\n"
    return simd(config, reduction)


def count_configs(baseline: Config, transforms: tuple[TransformSpec, ...], limit: int = 5000) -> list[Config]:
    """Every config reachable from `baseline` by any sequence of transforms (BFS), baseline first."""
    import itertools

    def key(config: Config) -> str:
        return repr(sorted(config.items()))

    seen = {key(baseline): baseline}
    frontier = [baseline]
    while frontier and len(seen) <= limit:
        nxt = []
        for config in frontier:
            for spec in transforms:
                names = list(spec.params)
                for values in itertools.product(*(spec.params[n] for n in names)):
                    new = spec.apply(config, dict(zip(names, values, strict=True)))
                    if new is not None and key(new) not in seen:
                        seen[key(new)] = new
                        nxt.append(new)
        frontier = nxt
    return list(seen.values())


def vloop(
    config: Config,
    var: str,
    lo: str,
    hi: str,
    body: str,
    *,
    reduction: str = "",
    parallel: bool = False,
    pad: str = "    ",
    unroll_key: str = "unroll",
) -> str:
    """`for (long var = lo; var < hi; var++) body` with the config's SIMD, unroll and (optionally) parallel.

    gcc takes one loop pragma per loop, so unrolling a SIMD or parallel loop is done by hand: blocks of
    `unroll` iterations (the block loop parallel, the in-block loop SIMD) plus a scalar remainder loop.
    """
    factor = int(config.get(unroll_key, 1))
    vec = bool(config.get("simd"))
    red = f" reduction({reduction})" if reduction else ""
    par = f"#pragma omp parallel for schedule({schedule_of(config)}){red}" if parallel else ""
    if factor <= 1 or (not vec and not par):
        if par and vec:
            pragma = par.replace("parallel for", "parallel for simd")
        elif par:
            pragma = par
        elif vec:
            pragma = f"#pragma omp simd{red}"
        elif factor > 1:
            pragma = f"#pragma GCC unroll {factor}"
        else:
            pragma = ""
        head = f"{pad}{pragma}\n" if pragma else ""
        return head + f"{pad}for (long {var} = {lo}; {var} < {hi}; {var}++) {body}\n"
    inner = f"#pragma omp simd{red}" if vec else f"#pragma GCC unroll {factor}"
    return (
        f"{pad}{{\n{pad}long {var}_end = ({lo}) + (({hi}) - ({lo})) / {factor} * {factor};\n"
        + (f"{pad}{par}\n" if par else "")
        + f"{pad}for (long {var}0 = {lo}; {var}0 < {var}_end; {var}0 += {factor}) {{\n"
        f"{pad}    {inner}\n"
        f"{pad}    for (long {var} = {var}0; {var} < {var}0 + {factor}; {var}++) {body}\n{pad}}}\n"
        f"{pad}for (long {var} = {var}_end; {var} < {hi}; {var}++) {body}\n{pad}}}\n"
    )
