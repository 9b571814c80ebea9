"""Elementwise chain y = silu(1.5 x + 0.25) + x: three kernels through memory, or one fused kernel."""

from __future__ import annotations

from kernelgraph.agent.tasks.base import Config, Renderer
from kernelgraph.agent.tasks.triton._common import (
    BACKEND,
    check_pow2,
    header,
    set_knob,
    toggle,
    warps_and_stages,
)
from kernelgraph.agent.transforms import Transform

AOT_N = 1 << 26


BASELINE: Config = {"BLOCK": 1024, "fuse": False, "num_warps": 4}

_KERNELS = """

@triton.jit
def affine_kernel(x_ptr, t_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n)
    tl.store(t_ptr + offs, 1.5 * x + 0.25, mask=offs < n)


@triton.jit
def silu_kernel(t_ptr, u_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    t = tl.load(t_ptr + offs, mask=offs < n)
    tl.store(u_ptr + offs, t * tl.sigmoid(t), mask=offs < n)


@triton.jit
def add_kernel(u_ptr, x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    u = tl.load(u_ptr + offs, mask=offs < n)
    x = tl.load(x_ptr + offs, mask=offs < n)
    tl.store(y_ptr + offs, u + x, mask=offs < n)


@triton.jit
def fused_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n)
    t = 1.5 * x + 0.25
    tl.store(y_ptr + offs, t * tl.sigmoid(t) + x, mask=offs < n)
"""


def _aot(kernel: str, ptrs: tuple[str, ...], block: int, warps: int) -> str:
    sig = ", ".join([f'"{p}": "*fp32"' for p in ptrs] + ['"n": "i32"', '"BLOCK": "constexpr"'])
    return (
        f'    {{"kernel": "{kernel}", "signature": {{{sig}}}, "constexprs": {{"BLOCK": {block}}},\n'
        f'     "num_warps": {warps}, "num_stages": 1, "sizes": {{"n": {AOT_N}}}}},\n'
    )


def render(config: Config) -> str:
    check_pow2(config, "BLOCK")
    block, warps, fuse = int(config["BLOCK"]), int(config["num_warps"]), bool(config["fuse"])
    opts = f"BLOCK={block}, num_warps={warps}"
    if fuse:
        aot = _aot("fused_kernel", ("x_ptr", "y_ptr"), block, warps)
        host = f"    fused_kernel[grid](x, y, n, {opts})\n"
    else:
        aot = (
            _aot("affine_kernel", ("x_ptr", "t_ptr"), block, warps)
            + _aot("silu_kernel", ("t_ptr", "u_ptr"), block, warps)
            + _aot("add_kernel", ("u_ptr", "x_ptr", "y_ptr"), block, warps)
        )
        host = (
            "    t = torch.empty_like(x)\n"
            "    u = torch.empty_like(x)\n"
            f"    affine_kernel[grid](x, t, n, {opts})\n"
            f"    silu_kernel[grid](t, u, n, {opts})\n"
            f"    add_kernel[grid](u, x, y, n, {opts})\n"
        )
    return (
        header("elementwise", config)
        + _KERNELS
        + f"""

AOT = [
{aot}]


def launch(x, y):
    import torch

    n = x.numel()
    grid = (triton.cdiv(n, {block}),)
{host}"""
    )


def renderer() -> Renderer:
    transforms = (
        toggle(Transform.FUSE, "fuse", "one kernel, intermediates stay in registers"),
        set_knob(Transform.TILE, "BLOCK", (256, 512, 1024, 2048, 4096), "elements per program"),
        warps_and_stages()[0],
    )
    return Renderer("elementwise", BACKEND, render, BASELINE, transforms)
