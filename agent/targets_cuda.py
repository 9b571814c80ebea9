"""CUDA targets: published peaks and per-SM limits of NVIDIA data-centre GPUs.

They are always "available" for compile and static metrics (Triton compiles for them on any
machine); runtime numbers need a local GPU of the same architecture (agent/backends/triton/backend.py).
Peaks are the vendor's datasheet figures (fp32 on the CUDA cores, no tensor cores; tensor-core
TF32 dense is in `limits` for reference), not measured here.
"""

from __future__ import annotations

from typing import Any

from kernelgraph.agent.target import Target

_COMMON_LIMITS: dict[str, Any] = {
    "regs_per_sm": 65536,
    "max_regs_per_thread": 255,
    "max_threads_per_sm": 2048,
    "max_warps_per_sm": 64,
    "max_blocks_per_sm": 32,
    "max_threads_per_block": 1024,
    "warp_size": 32,
}


def _cuda(
    name: str,
    sm: int,
    gpu: str,
    gflops: float,
    gbps: float,
    sms: int,
    smem_sm_kb: int,
    smem_block_kb: int,
    tf32_tensor_gflops: float,
) -> Target:
    return Target(
        name=name,
        kind="cuda",
        arch=f"sm_{sm}",
        peak_gflops=gflops,
        peak_gbps=gbps,
        cores=sms,
        isa=f"sm_{sm}",
        host=gpu,
        limits={
            **_COMMON_LIMITS,
            "sm": sm,
            "gpu": gpu,
            "sm_count": sms,
            "smem_per_sm": smem_sm_kb * 1024,
            "max_smem_per_block": smem_block_kb * 1024,
            "tf32_tensor_gflops": tf32_tensor_gflops,
            "runtime": "needs a local GPU of this architecture",
        },
    )


CUDA_TARGETS: dict[str, Target] = {
    # A100 SXM4 80GB: 19.5 TF fp32, 156 TF TF32 dense, 2039 GB/s, 108 SMs, 164 KB smem/SM (163 KB/block).
    "cuda-sm80": _cuda("cuda-sm80", 80, "A100-SXM4-80GB", 19_500.0, 2039.0, 108, 164, 163, 156_000.0),
    # H100 SXM5 80GB: 67 TF fp32, 495 TF TF32 dense, 3350 GB/s, 132 SMs, 228 KB smem/SM (227 KB/block).
    "cuda-sm90": _cuda("cuda-sm90", 90, "H100-SXM5-80GB", 67_000.0, 3350.0, 132, 228, 227, 494_700.0),
    # H200 SXM 141GB: the H100's GH100 die with HBM3e: same compute, 4800 GB/s.
    "cuda-sm90-h200": _cuda(
        "cuda-sm90-h200", 90, "H200-SXM-141GB", 67_000.0, 4800.0, 132, 228, 227, 494_700.0
    ),
    # B200 (HGX, 1000 W): 80 TF fp32, 1100 TF TF32 dense, 8000 GB/s, 148 SMs, 228 KB smem/SM (227 KB/block).
    "cuda-sm100": _cuda("cuda-sm100", 100, "B200-HGX", 80_000.0, 8000.0, 148, 228, 227, 1_100_000.0),
}


def cuda_target_names() -> list[str]:
    return list(CUDA_TARGETS)
