"""What a target is: where a kernel is compiled for and run. Which targets exist: targets.py (CPU
march levels, probed) and targets_cuda.py (NVIDIA GPUs, datasheet figures)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any


class UnknownTargetError(KeyError):
    """No target by that name; the message lists the known names."""

    def __init__(self, name: str, known: list[str]) -> None:
        self.name, self.known = name, known
        super().__init__(name)

    def __str__(self) -> str:
        return f"unknown target {self.name!r}; known: {', '.join(self.known)}"


@dataclass(frozen=True)
class Target:
    """Where a kernel is compiled for and run. `limits` holds kind-specific facts (e.g. sm, smem)."""

    name: str
    kind: str  # "cpu" | "cuda"
    arch: str  # gcc -march value, or "sm_90" for CUDA
    cflags: tuple[str, ...] = ()
    peak_gflops: float | None = None  # fp32, all cores
    peak_gbps: float | None = None
    cores: int | None = None
    isa: str | None = None  # CPU: the march level the signature normalises against
    host: str = ""
    available: bool = True
    unavailable_reason: str = ""
    limits: Mapping[str, Any] = field(default_factory=dict)

    @property
    def ridge_flop_per_byte(self) -> float | None:
        if not self.peak_gflops or not self.peak_gbps:
            return None
        return self.peak_gflops / self.peak_gbps
