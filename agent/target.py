"""What a target is: where a kernel is compiled for and run. Which targets exist: targets.py (CPU
march levels, probed) and targets_cuda.py (NVIDIA GPUs, datasheet figures)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

# Where only the memory (DRAM) peak is known (CUDA targets: datasheet figures), cache-resident data may
# legitimately stream this many times faster; measured CPU levels replace the guess.
UNMEASURED_CACHE_FACTOR = 8.0


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
    peak_gflops: float | None = None  # fp32, all cores: an upper bound (agent/targets.py)
    peak_gbps: float | None = None  # memory (beyond the last-level cache), all cores
    # CPU: upper bounds of streaming GB/s per level ("L1", "L2", "LLC", "memory"), fastest first, and
    # how many bytes each cache level holds over all cores; empty where not measured.
    bandwidth_gbps: Mapping[str, float] = field(default_factory=dict)
    cache_bytes: Mapping[str, int] = field(default_factory=dict)
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

    @property
    def max_gbps(self) -> float | None:
        """The fastest bandwidth any kernel can reach here, whatever its cache state: L1's where the
        levels are measured, else the memory peak times UNMEASURED_CACHE_FACTOR."""
        if self.bandwidth_gbps:
            return max(self.bandwidth_gbps.values())
        return self.peak_gbps * UNMEASURED_CACHE_FACTOR if self.peak_gbps else None

    def attainable_ns(self, flops: float, bytes_moved: float) -> float | None:
        """The roofline's least time for this much work (None without peaks): the larger of the
        FLOPs at peak and the compulsory bytes streamed (`streaming_ns`)."""
        times = [flops / self.peak_gflops] if self.peak_gflops and flops > 0 else []
        streaming = self.streaming_ns(bytes_moved) if bytes_moved > 0 else None
        if streaming is not None:
            times.append(streaming)
        return max(times) if times else None

    def streaming_ns(self, bytes_moved: float) -> float | None:
        """The least time to move `bytes_moved`: the fastest levels serve as much as they hold (warm
        caches, as the timing keeps them), memory the rest; GB/s is bytes per ns."""
        if not self.bandwidth_gbps:
            return bytes_moved / self.peak_gbps if self.peak_gbps else None
        ns, remaining = 0.0, bytes_moved
        for level, gbps in self.bandwidth_gbps.items():
            held = min(remaining, self.cache_bytes.get(level, remaining))
            ns += held / gbps
            remaining -= held
            if remaining <= 0:
                break
        return ns
