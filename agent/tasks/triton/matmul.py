"""Dense fp32 matmul C = A @ B: tiled, optionally grouped launch order, split-K and persistent."""

from __future__ import annotations

from kernelgraph.agent.tasks.base import Config, Renderer
from kernelgraph.agent.tasks.triton._common import (
    BACKEND,
    NUM_SMS,
    check_pow2,
    header,
    program_loop,
    set_knob,
    set_knobs,
    toggle,
    warps_and_stages,
)
from kernelgraph.agent.transforms import Transform

AOT_M = AOT_N = AOT_K = 2048


BASELINE: Config = {
    "BLOCK_M": 64,
    "BLOCK_N": 64,
    "BLOCK_K": 32,
    "GROUP_M": 1,
    "SPLIT_K": 1,
    "persistent": False,
    "num_warps": 4,
    "num_stages": 2,
}

_KERNEL = """

@triton.jit
def matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_ak, stride_bk, stride_bn,
                  stride_cs, stride_cm, stride_cn,
                  BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
                  GROUP_M: tl.constexpr, SPLIT_K: tl.constexpr, NUM_STAGES: tl.constexpr):
    num_m = tl.cdiv(M, BLOCK_M)
    num_n = tl.cdiv(N, BLOCK_N)
    tiles = num_m * num_n
    k_chunk = tl.cdiv(tl.cdiv(K, SPLIT_K), BLOCK_K) * BLOCK_K
    split = tl.program_id(1)
{tile_loop}
        if GROUP_M > 1:
            # Grouped (swizzled) order: GROUP_M row-blocks share B tiles while they are still in L2.
            width = GROUP_M * num_n
            first_m = (tile // width) * GROUP_M
            group = tl.minimum(num_m - first_m, GROUP_M)
            pid_m = first_m + (tile % width) % group
            pid_n = (tile % width) // group
        else:
            pid_m = tile // num_n
            pid_n = tile % num_n
        rm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
        rn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
        acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
        k_lo = split * k_chunk
        for k0 in tl.range(k_lo, tl.minimum(k_lo + k_chunk, K), BLOCK_K, num_stages=NUM_STAGES):
            rk = k0 + tl.arange(0, BLOCK_K)
            a = tl.load(a_ptr + rm[:, None] * stride_am + rk[None, :] * stride_ak,
                        mask=(rm[:, None] < M) & (rk[None, :] < K), other=0.0)
            b = tl.load(b_ptr + rk[:, None] * stride_bk + rn[None, :] * stride_bn,
                        mask=(rk[:, None] < K) & (rn[None, :] < N), other=0.0)
            acc = tl.dot(a, b, acc, input_precision="ieee")
        tl.store(c_ptr + split * stride_cs + rm[:, None] * stride_cm + rn[None, :] * stride_cn, acc,
                 mask=(rm[:, None] < M) & (rn[None, :] < N))


@triton.jit
def splitk_reduce_kernel(part_ptr, c_ptr, n_elements, SPLIT_K: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n_elements
    acc = tl.zeros((BLOCK,), dtype=tl.float32)
    for s in tl.static_range(SPLIT_K):
        acc += tl.load(part_ptr + s * n_elements + offs, mask=mask, other=0.0)
    tl.store(c_ptr + offs, acc, mask=mask)
"""


def render(config: Config) -> str:
    """Tiled matmul; GROUP_M > 1 swizzles the launch order, SPLIT_K > 1 adds a partial-sum reduction."""
    check_pow2(config, "BLOCK_M", "BLOCK_N", "BLOCK_K")
    bm, bn, bk = int(config["BLOCK_M"]), int(config["BLOCK_N"]), int(config["BLOCK_K"])
    group, split = int(config["GROUP_M"]), int(config["SPLIT_K"])
    warps, stages, persistent = (
        int(config["num_warps"]),
        int(config["num_stages"]),
        bool(config["persistent"]),
    )
    tile_loop = program_loop("tile", "tiles", persistent)
    grid0 = "min(tiles, _num_sms(a))" if persistent else "tiles"
    consts = (
        f'"BLOCK_M": {bm}, "BLOCK_N": {bn}, "BLOCK_K": {bk}, "GROUP_M": {group}, '
        f'"SPLIT_K": {split}, "NUM_STAGES": {stages}'
    )
    sig = ", ".join(
        [f'"{p}": "*fp32"' for p in ("a_ptr", "b_ptr", "c_ptr")]
        + [
            f'"{p}": "i32"'
            for p in (
                "M",
                "N",
                "K",
                "stride_am",
                "stride_ak",
                "stride_bk",
                "stride_bn",
                "stride_cs",
                "stride_cm",
            )
        ]
        + ['"stride_cn": "i32"']
        + [
            f'"{p}": "constexpr"'
            for p in ("BLOCK_M", "BLOCK_N", "BLOCK_K", "GROUP_M", "SPLIT_K", "NUM_STAGES")
        ]
    )
    aot = (
        f'    {{"kernel": "matmul_kernel", "signature": {{{sig}}},\n'
        f'     "constexprs": {{{consts}}}, "num_warps": {warps}, "num_stages": {stages},\n'
        f'     "sizes": {{"M": {AOT_M}, "N": {AOT_N}, "K": {AOT_K}}}}},\n'
    )
    if split > 1:
        aot += (
            '    {"kernel": "splitk_reduce_kernel",\n'
            '     "signature": {"part_ptr": "*fp32", "c_ptr": "*fp32", "n_elements": "i32", '
            '"SPLIT_K": "constexpr", "BLOCK": "constexpr"},\n'
            f'     "constexprs": {{"SPLIT_K": {split}, "BLOCK": 1024}}, "num_warps": 4, "num_stages": 1}},\n'
        )
        target = "part"
        alloc = "    part = torch.empty((SPLIT_K, M, N), dtype=c.dtype, device=c.device)\n"
        strides = "part.stride(0), part.stride(1), part.stride(2)"
        finish = "    splitk_reduce_kernel[(triton.cdiv(M * N, 1024),)](part, c, M * N, SPLIT_K=SPLIT_K, BLOCK=1024)\n"
    else:
        target, alloc, finish = "c", "", ""
        strides = "0, c.stride(0), c.stride(1)"
    return (
        header("matmul", config)
        + _KERNEL.replace("{tile_loop}", tile_loop)
        + f"""

AOT = [
{aot}]
SPLIT_K = {split}


{NUM_SMS}

def launch(a, b, c):
    import torch

    M, K = a.shape
    N = b.shape[1]
    tiles = triton.cdiv(M, {bm}) * triton.cdiv(N, {bn})
{alloc}    matmul_kernel[({grid0}, SPLIT_K)](
        a, b, {target}, M, N, K, a.stride(0), a.stride(1), b.stride(0), b.stride(1), {strides},
        BLOCK_M={bm}, BLOCK_N={bn}, BLOCK_K={bk}, GROUP_M={group}, SPLIT_K=SPLIT_K, NUM_STAGES={stages},
        num_warps={warps}, num_stages={stages},
    )
{finish}"""
    )


def renderer() -> Renderer:
    transforms = (
        set_knobs(
            Transform.TILE,
            {"BLOCK_M": (32, 64, 128), "BLOCK_N": (32, 64, 128), "BLOCK_K": (16, 32, 64)},
            "output tile and K step held in registers/shared memory",
        ),
        set_knob(
            Transform.BLOCK_FOR_CACHE,
            "GROUP_M",
            (1, 4, 8),
            "swizzle program order so row-blocks share B in L2",
        ),
        set_knob(
            Transform.SPLIT_REDUCTION,
            "SPLIT_K",
            (1, 2, 4, 8),
            "split the K loop across programs, reduce partial sums",
        ),
        toggle(Transform.SCHEDULE, "persistent", "one program per SM loops over output tiles"),
        *warps_and_stages(),
    )
    return Renderer("matmul", BACKEND, render, BASELINE, transforms)
