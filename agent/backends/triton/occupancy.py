"""The occupancy model of the Triton backend: per-SM resource limits of each NVIDIA architecture,
theoretical occupancy as the CUDA occupancy calculator computes it, and the static metrics of a
compiled variant (what the backend reports without a GPU).
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class ArchLimits:
    """Per-SM resource limits from the CUDA C Programming Guide, table "Technical Specifications"."""

    sm: int
    regs_per_sm: int = 65536
    max_regs_per_thread: int = 255
    max_warps_per_sm: int = 64
    max_blocks_per_sm: int = 32
    max_threads_per_block: int = 1024
    smem_per_sm: int = 228 * 1024
    max_smem_per_block: int = 227 * 1024
    reg_alloc_unit: int = 256  # registers are allocated per warp in units of 256
    smem_alloc_unit: int = 128


ARCH_LIMITS: Mapping[int, ArchLimits] = {
    80: ArchLimits(80, smem_per_sm=164 * 1024, max_smem_per_block=163 * 1024),
    90: ArchLimits(90),
    100: ArchLimits(100),
}


def theoretical_occupancy(limits: ArchLimits, regs: int, warps: int, smem: int) -> tuple[float, int, str]:
    """(occupancy %, resident blocks per SM, the limiting resource), as the CUDA occupancy calculator."""
    per_warp_regs = math.ceil(max(regs, 1) * 32 / limits.reg_alloc_unit) * limits.reg_alloc_unit
    by = {
        "warps": limits.max_warps_per_sm // warps,
        "blocks": limits.max_blocks_per_sm,
        "registers": (limits.regs_per_sm // per_warp_regs) // warps,
    }
    if smem > 0:
        by["shared_memory"] = limits.smem_per_sm // (
            math.ceil(smem / limits.smem_alloc_unit) * limits.smem_alloc_unit
        )
    limiter = min(by, key=lambda k: by[k])
    blocks = max(0, by[limiter])
    return 100.0 * blocks * warps / limits.max_warps_per_sm, blocks, limiter


def target_arch(target: Any) -> int:
    """The SM number (80, 90, 100) of a target: a Target with `sm`/`arch`/`name`, or a name like cuda-sm90."""
    for attr in ("sm", "arch", "compute_capability"):
        value = getattr(target, attr, None)
        if isinstance(value, int):
            return value
        if isinstance(value, str) and value.isdigit():
            return int(value)
    name = target if isinstance(target, str) else str(getattr(target, "name", target))
    match = re.search(r"sm_?(\d+)", name)
    if not match:
        raise ValueError(f"not a CUDA target: {name!r} (expected e.g. cuda-sm90)")
    arch = int(match.group(1))
    if arch not in ARCH_LIMITS:
        raise ValueError(f"unsupported CUDA arch sm{arch}; known: {sorted(ARCH_LIMITS)}")
    return arch


def no_fit(response: Mapping[str, Any]) -> str:
    """Why the compiled kernels cannot launch on the arch (the `fit_error`s `static_metrics` set)."""
    return "; ".join(k.get("fit_error", "") for k in response.get("kernels", []) if k.get("fit_error"))


def static_metrics(kernels: Sequence[dict[str, Any]], arch: int) -> dict[str, float]:
    """Static metrics of the whole variant: the worst kernel per resource, the first kernel's launch shape."""
    if not kernels:
        return {}
    limits = ARCH_LIMITS[arch]
    occupancies = []
    fits = 1.0
    for k in kernels:
        pct, blocks, limiter = theoretical_occupancy(
            limits, k["registers"], k["num_warps"], k["shared_bytes"]
        )
        k["theoretical_occupancy_pct"], k["blocks_per_sm"], k["occupancy_limiter"] = pct, blocks, limiter
        occupancies.append(pct)
        if k["shared_bytes"] > limits.max_smem_per_block or k["registers"] > limits.max_regs_per_thread:
            fits = 0.0
            k["fit_error"] = (
                f"{k['name']}: out of resources on sm_{arch}: shared memory {k['shared_bytes']} B "
                f"(limit {limits.max_smem_per_block} B), registers {k['registers']} (limit {limits.max_regs_per_thread})"
            )
    first = kernels[0]
    return {
        "registers_per_thread": float(max(k["registers"] for k in kernels)),
        "spill_bytes": float(max(k["spill_bytes"] for k in kernels)),
        "shared_mem_bytes": float(max(k["shared_bytes"] for k in kernels)),
        "num_warps": float(first["num_warps"]),
        "num_stages": float(first["num_stages"]),
        "threads_per_block": float(32 * first["num_warps"]),
        "theoretical_occupancy_pct": float(min(occupancies)),
        "blocks_per_sm": float(min(k["blocks_per_sm"] for k in kernels)),
        "num_kernels": float(len(kernels)),
        "fits": fits,
    }
