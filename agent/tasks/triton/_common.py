"""Helpers shared by the Triton renderers: knob transforms, source headers, power-of-two checks.

A Triton task's config is a flat dict of knobs (BLOCK sizes, num_warps, num_stages, and boolean
or small-int strategy switches such as `online`, `persistent`, `GROUP_M`, `SPLIT_K`, `fuse`). The
renderer turns a config into a self-describing module: one or more `@triton.jit` kernels, an `AOT`
list that says how to compile each kernel ahead of time (signature, constexprs, warps, stages) at a
representative problem size, and `launch(**tensors)` that runs the kernels on torch tensors whose
sizes it reads from their shapes.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from typing import Any

from kernelgraph.agent.tasks.base import Config, TransformSpec
from kernelgraph.agent.transforms import Transform

BACKEND = "triton"


def set_knob(name: str, key: str, choices: tuple[Any, ...], description: str) -> TransformSpec:
    """A transform that sets `config[key]` to one of `choices`; None when it would change nothing."""

    def apply(config: Config, params: Mapping[str, Any]) -> Config | None:
        value = params["value"]
        if config.get(key) == value:
            return None
        return {**config, key: value}

    return TransformSpec(name=name, params={"value": choices}, apply=apply, description=description)


def set_knobs(name: str, choices: Mapping[str, tuple[Any, ...]], description: str) -> TransformSpec:
    """A transform that sets several keys at once (e.g. BLOCK_M and BLOCK_N for tiling)."""

    def apply(config: Config, params: Mapping[str, Any]) -> Config | None:
        new = {**config, **{k: params[k] for k in choices}}
        return None if all(config.get(k) == new[k] for k in choices) else new

    return TransformSpec(name=name, params=dict(choices), apply=apply, description=description)


def toggle(name: str, key: str, description: str) -> TransformSpec:
    """A transform that switches a boolean strategy on (or off, with value=False)."""
    return set_knob(name, key, (True, False), description)


def warps_and_stages(
    warps: tuple[int, ...] = (1, 2, 4, 8, 16), stages: tuple[int, ...] = (1, 2, 3, 4)
) -> tuple[TransformSpec, ...]:
    return (
        set_knob(Transform.PARALLELIZE, "num_warps", warps, "warps per program (threads per block / 32)"),
        set_knob(Transform.UNROLL, "num_stages", stages, "software-pipelining depth of loops over tiles"),
    )


def header(task: str, config: Config) -> str:
    """Module docstring and imports of a rendered source; the config is recorded in the docstring."""
    cfg = json.dumps(dict(config), sort_keys=True)
    return (
        f'"""KernelGraph Triton kernel for task {task!r}, rendered from config {cfg}."""\n\n'
        "import triton\n"
        "import triton.language as tl\n"
    )


# Source text of the rendered modules' `_num_sms(tensor)`: the SM count that sizes a persistent grid.
NUM_SMS = """def _num_sms(t):
    import torch

    return torch.cuda.get_device_properties(t.device).multi_processor_count if t.is_cuda else 4
"""


def program_loop(var: str, count: str, persistent: bool) -> str:
    """The loop line over `var`: a persistent program strides over all `count` items; otherwise each
    program takes its own one (a one-trip loop, so the body is the same source either way)."""
    if persistent:
        return f"    for {var} in tl.range(tl.program_id(0), {count}, tl.num_programs(0)):"
    return f"    for {var} in tl.range(tl.program_id(0), tl.program_id(0) + 1):"


def pow2(n: int) -> int:
    return 1 << max(0, math.ceil(math.log2(max(1, n))))


def check_pow2(config: Config, *keys: str) -> None:
    for key in keys:
        value = int(config[key])
        if value <= 0 or value & (value - 1):
            raise ValueError(f"{key}={value} must be a power of two")
