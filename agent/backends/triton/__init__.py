"""The Triton backend (see docs/triton-backend.md), in four modules:

- backend.py: `TritonBackend`, the Backend protocol (compile cache, check, profile) on the parent side;
- occupancy.py: per-architecture SM limits, theoretical occupancy, a variant's static metrics;
- worker.py: the sandboxed child process (`python -m kernelgraph.agent.backends.triton.worker`);
- ncu.py: Nsight Compute counters, collected by the worker on a GPU.
"""

from __future__ import annotations

from kernelgraph.agent.backends.triton.backend import TritonBackend, local_cuda_arch
from kernelgraph.agent.backends.triton.occupancy import (
    ARCH_LIMITS,
    ArchLimits,
    target_arch,
    theoretical_occupancy,
)

__all__ = [
    "ARCH_LIMITS",
    "ArchLimits",
    "TritonBackend",
    "local_cuda_arch",
    "target_arch",
    "theoretical_occupancy",
]
