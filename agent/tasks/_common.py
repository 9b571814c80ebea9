"""Helpers shared by the task modules: config edits, transform factories and C snippets."""

from __future__ import annotations

import itertools
import random
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
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


def _knob_transform(
    transform: Transform,
    params: Mapping[str, tuple[Any, ...]],
    changes: Callable[[Mapping[str, Any]], dict[str, Any] | None],
    requires: Callable[[Config], bool] | None,
    description: str,
) -> TransformSpec:
    """A transform that applies `changes(params)` to the config: None when `requires` refuses the
    config, when `changes` refuses the params, or when nothing changes."""

    def apply(config: Config, chosen: Mapping[str, Any]) -> Config | None:
        if requires is not None and not requires(config):
            return None
        new = changes(chosen)
        return None if new is None else with_(config, **new)

    return TransformSpec(
        name=str(transform), params=params, apply=apply, description=description or transform.description
    )


def set_knob(
    transform: Transform,
    key: str,
    choices: tuple[Any, ...],
    *,
    requires: Callable[[Config], bool] | None = None,
    description: str = "",
) -> TransformSpec:
    """A transform that sets knob `key` to the chosen value; None if already there or not allowed."""

    def changes(params: Mapping[str, Any]) -> dict[str, Any] | None:
        value = params.get(key, choices[0])
        return {key: value} if value in choices else None

    return _knob_transform(transform, {key: choices}, changes, requires, description)


def turn_on(
    transform: Transform,
    key: str,
    *,
    requires: Callable[[Config], bool] | None = None,
    description: str = "",
) -> TransformSpec:
    """A parameterless transform that switches boolean knob `key` on."""
    return _knob_transform(transform, {}, lambda params: {key: True}, requires, description)


# fp32 lanes of explicit vector code: AVX-512, AVX2, SSE (the `vector_width` transform's choices).
VECTOR_WIDTHS: tuple[int, ...] = (16, 8, 4)


def vector_width(apply: Callable[[Config, Mapping[str, Any]], Config | None], what: str) -> TransformSpec:
    """The `vector_width` transform: `apply` sets knob `width` (fp32 lanes, from VECTOR_WIDTHS)."""
    return TransformSpec(
        name=str(Transform.VECTOR_WIDTH),
        params={"width": VECTOR_WIDTHS},
        apply=apply,
        description=f"{what} in explicit GCC vectors of 16 (AVX-512), 8 (AVX2) or 4 (SSE) fp32 lanes.",
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


def c_source(task: str, config: Config, params: str, body: str, *, head: str = C_PRELUDE) -> str:
    """A complete C source: `head` (includes and helpers), a comment naming the task and the config
    (so distinct configs render distinct sources), then `void kernel(params) { body }`."""
    return head + f"/* {task} {dict(config)} */\n" + f"void kernel({params}) {{\n" + body + "}\n"


def row_loop(config: Config, row: str) -> str:
    """The (optionally parallel) loop over the rows i of an r x c matrix x into y; `row` is one row's
    code, reading `xr` and writing `yr`."""
    return (
        omp_for(config) + "    for (int i = 0; i < r; i++) {\n"
        "        const float* xr = x + (long)i * c;\n        float* yr = y + (long)i * c;\n" + row + "    }\n"
    )


def split_sum(
    config: Config,
    total: str,
    acc: int,
    term: Callable[[str], str],
    *,
    index: str,
    lo: str,
    hi: str,
    end: str,
    ctype: str = "float",
    pragma: Callable[[Config, str], str] | None = None,
    pad: str = "        ",
) -> str:
    """`ctype total` = the sum of `term(index)` for `index` in [lo, hi), in `acc` interleaved partial
    sums total0..total{acc-1} (independent dependency chains) added up at the end, then a scalar
    remainder loop. `end` declares where the whole blocks end ("const int nm"; the index has its
    type); `pragma` (default `simd`) takes the partial sums' reduction clause."""
    end_type, end_name = end.split()[-2:]
    names = [f"{total}{k}" for k in range(acc)]
    zero = "0.0f" if ctype == "float" else "0.0"
    whole = f"{hi} - {hi} % {acc}" if lo == "0" else f"{hi} - ({hi} - {lo}) % {acc}"
    adds = " ".join(f"{v} += {term(f'{index} + {k}')};" for k, v in enumerate(names))
    return (
        f"{pad}{ctype} {', '.join(v + ' = ' + zero for v in names)};\n{pad}{end} = {whole};\n"
        + (pragma or simd)(config, "+:" + ",".join(names))
        + f"{pad}for ({end_type} {index} = {lo}; {index} < {end_name}; {index} += {acc}) {{ {adds} }}\n"
        f"{pad}{ctype} {total} = {' + '.join(names)};\n"
        f"{pad}for ({end_type} {index} = {end_name}; {index} < {hi}; {index}++) {total} += {term(index)};\n"
    )


def rng(seed: int) -> np.random.Generator:
    return np.random.default_rng(seed)


def f32(array: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(array, dtype=np.float32)


EDGE_SEED = 977  # edge-of-domain input sets are fixed: the same set on every check


def par_simd(config: Config, reduction: str = "") -> str:
    """The pragma for one loop that may be both parallel and SIMD (gcc takes one pragma per loop)."""
    red = f" reduction({reduction})" if reduction else ""
    sched = schedule_of(config)
    if config.get("parallel") and config.get("simd"):
        return f"#pragma omp parallel for simd schedule({sched}){red}\n"
    if config.get("parallel"):
        return f"#pragma omp parallel for schedule({sched}){red}\n"
    return simd(config, reduction)


def config_key(config: Config) -> str:
    """One config's identity in a space (keys sorted)."""
    return repr(sorted(config.items()))


def iter_configs(baseline: Config, transforms: tuple[TransformSpec, ...]) -> Iterator[Config]:
    """Every config reachable from `baseline` by any sequence of transforms, lazily, in BFS order
    (baseline first, then one transform away, then two, ...)."""
    seen = {config_key(baseline)}
    frontier = [baseline]
    yield baseline
    while frontier:
        nxt = []
        for config in frontier:
            for spec in transforms:
                names = list(spec.params)
                for values in itertools.product(*(spec.params[n] for n in names)):
                    new = spec.apply(config, dict(zip(names, values, strict=True)))
                    if new is not None and config_key(new) not in seen:
                        seen.add(config_key(new))
                        nxt.append(new)
                        yield new
        frontier = nxt


@dataclass(frozen=True)
class ConfigSpace:
    """The configs of a task's space up to `limit`, and whether that is all of them.

    When `complete` is False the space is larger than `limit` and `configs` holds its first `limit`
    configs in BFS order (the ones fewest transforms from the baseline): never the whole space."""

    configs: list[Config]
    complete: bool
    limit: int

    def describe(self) -> str:
        if self.complete:
            return f"{len(self.configs)} configs (the whole space)"
        return f"the first {len(self.configs)} configs in BFS order of a space larger than {self.limit}"


def config_space(baseline: Config, transforms: tuple[TransformSpec, ...], limit: int = 5000) -> ConfigSpace:
    """At most `limit` configs of the space (BFS order, baseline first), saying whether that is all."""
    configs = list(itertools.islice(iter_configs(baseline, transforms), limit + 1))
    return ConfigSpace(configs=configs[:limit], complete=len(configs) <= limit, limit=limit)


def sample_configs(
    baseline: Config, transforms: tuple[TransformSpec, ...], k: int, seed: int | str, max_steps: int = 12
) -> list[Config]:
    """`k` distinct configs drawn by seeded random walks from the baseline (each walk applies up to
    `max_steps` random applicable transforms and keeps where it ends). Cheap on spaces too large to
    enumerate; it is not uniform over the space (configs many transforms deep are drawn less often)."""
    rng = random.Random(seed)
    found: dict[str, Config] = {}
    for _ in range(k * 20):
        if len(found) >= k:
            break
        config = baseline
        for _ in range(rng.randint(1, max_steps)):
            spec = rng.choice(transforms)
            params = {name: rng.choice(choices) for name, choices in spec.params.items()}
            config = spec.apply(config, params) or config
        if config_key(config) != config_key(baseline):
            found.setdefault(config_key(config), config)
    return list(found.values())


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
