"""Dense matmul C = A @ B (square, fp32): the classic loop-order, tiling and vectorization study."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kernelgraph.agent.tasks._common import (
    C_PRELUDE,
    VECTOR_WIDTHS,
    f32,
    indent,
    omp_for,
    parallelize,
    rng,
    schedule,
    set_knob,
    simd,
    turn_on,
    unroll,
    vector_width,
    with_,
)
from kernelgraph.agent.tasks._define import define_task, product_sums_scale, shaped_like, signed_wide_inputs
from kernelgraph.agent.tasks.base import Arrays, Config, Instance, LibraryCall, Shape, Task, TransformSpec
from kernelgraph.agent.transforms import Transform

N_FULL, N_SMALL = 300, 72  # 72 is not a multiple of any tile: edge handling gets checked


def inputs_at(seed: int, shape: Shape) -> Arrays:
    (n,) = shape
    g = rng(seed)
    return {"a": f32(g.uniform(-1, 1, (n, n))), "b": f32(g.uniform(-1, 1, (n, n)))}


def reference(inputs: Arrays) -> Arrays:
    return {"c": (inputs["a"].astype("f8") @ inputs["b"].astype("f8")).astype("f4")}


# The register-blocked kernel keeps MR x NV accumulators of W lanes live; AVX-512 has 32 vector
# registers, so beyond 28 accumulators (plus the NV B loads and the A broadcast) gcc spills.
MAX_ACCUMULATORS = 28
LOOP_KNOBS: Config = {"order": "ijk", "tile": 0, "layout": "row", "unroll": 1, "simd": False, "jam": 1}


def vector_type(width: int) -> str:
    """A GCC vector type of `width` fp32 lanes; aligned(4) makes dereferencing an unaligned address legal."""
    return f"typedef float vf __attribute__((vector_size({width * 4}), aligned(4)));\n"


def _j_loop(config: Config, rows: list[int], b_at: str) -> str:
    """The innermost j loop of the loop kernel (ikj order) updating C rows i+q for q in `rows`."""
    width = int(config["width"])
    scalar = " ".join(f"c[(long)(i + {q}) * n + j] += a{q} * bv;" for q in rows)
    loads = " ".join(f"float a{q} = a[(long)(i + {q}) * n + k];" for q in rows)
    if width:
        vec = " ".join(f"*(vf*)(c + (long)(i + {q}) * n + j) += v{q} * bv;" for q in rows)
        broadcasts = " ".join(f"vf v{q} = (vf){{0}} + a{q};" for q in rows)
        return (
            f"{{ {loads} {broadcasts} int j = J0;\n"
            f"for (; j + {width} <= J1; j += {width}) {{ vf bv = *(const vf*)(bb + (long)k * n + j); {vec} }}\n"
            f"for (; j < J1; j++) {{ float bv = {b_at}; {scalar} }} }}\n"
        )
    inner_unroll = "" if config["simd"] else unroll(config)
    return (
        f"{{ {loads}\n"
        + simd(config)
        + inner_unroll
        + f"for (int j = J0; j < J1; j++) {{ float bv = {b_at}; {scalar} }} }}\n"
    )


def _loops(config: Config, b_at: str) -> str:
    """The i/k/j (or i/j/k) loop nest over one block [I0,I1) x [K0,K1) x [J0,J1)."""
    jam = int(config["jam"])
    if config["order"] == "ikj":
        mid_unroll = unroll(config) if config["simd"] and not config["width"] else ""
        nest = lambda rows: mid_unroll + "for (int k = K0; k < K1; k++)\n" + _j_loop(config, rows, b_at)  # noqa: E731
        if jam > 1:
            return (
                f"{{ int I_jam = I0 + (I1 - I0) / {jam} * {jam};\n"
                f"for (int i = I0; i < I_jam; i += {jam})\n"
                + nest(list(range(jam)))
                + "for (int i = I_jam; i < I1; i++)\n"
                + nest([0])
                + "}\n"
            )
        return "for (int i = I0; i < I1; i++)\n" + nest([0])
    mid_unroll, inner_unroll = (unroll(config), "") if config["simd"] else ("", unroll(config))
    inner = (
        "{ float s = 0.0f;\n"
        + simd(config, "+:s")
        + inner_unroll
        + "for (int k = K0; k < K1; k++) s += a[(long)i * n + k] * "
        + b_at
        + ";\n"
        + "c[(long)i * n + j] += s; }\n"
    )
    return "for (int i = I0; i < I1; i++)\n" + mid_unroll + "for (int j = J0; j < J1; j++)\n" + inner


def render_loops(config: Config) -> str:
    """The loop-nest kernels: loop order, cache tiles, B's layout, unroll(-and-jam), SIMD, threads."""
    order, tile, layout = config["order"], int(config["tile"]), config["layout"]
    bt = layout == "transposed"
    b_at = "bb[(long)j * n + k]" if bt else "bb[(long)k * n + j]"
    prologue = "    const float* bb = b;\n"
    epilogue = ""
    if bt:
        prologue = (
            "    float* bt = (float*)malloc(sizeof(float) * (size_t)n * n);\n"
            + omp_for(config)
            + "    for (int i = 0; i < n; i++)\n"
            "        for (int j = 0; j < n; j++) bt[(long)j * n + i] = b[(long)i * n + j];\n"
            "    const float* bb = bt;\n"
        )
        epilogue = "    free(bt);\n"
    step = tile if tile else 0
    loops = _loops(config, b_at)
    if step:
        body = (
            omp_for(config) + f"    for (int ii = 0; ii < n; ii += {step}) {{\n"
            f"        int I0 = ii, I1 = ii + {step} < n ? ii + {step} : n;\n"
            "        for (int i = I0; i < I1; i++) memset(c + (long)i * n, 0, sizeof(float) * n);\n"
            f"        for (int kk = 0; kk < n; kk += {step}) {{\n"
            f"        int K0 = kk, K1 = kk + {step} < n ? kk + {step} : n;\n"
            f"        for (int jj = 0; jj < n; jj += {step}) {{\n"
            f"        int J0 = jj, J1 = jj + {step} < n ? jj + {step} : n;\n" + loops + "        }}\n    }\n"
        )
    elif int(config["jam"]) > 1 and config["parallel"]:
        # Threads split blocks of `jam` rows: the jammed loop needs whole blocks per iteration.
        jam = int(config["jam"])
        body = (
            "    memset(c, 0, sizeof(float) * (size_t)n * n);\n"
            "    const int K0 = 0, K1 = n, J0 = 0, J1 = n;\n"
            + omp_for(config)
            + f"    for (int ib = 0; ib < n; ib += {jam}) {{\n"
            f"        int I0 = ib, I1 = ib + {jam} < n ? ib + {jam} : n;\n" + loops + "    }\n"
        )
    else:
        body = (
            "    memset(c, 0, sizeof(float) * (size_t)n * n);\n"
            "    const int I0 = 0, I1 = n, K0 = 0, K1 = n, J0 = 0, J1 = n;\n" + omp_for(config) + loops
        )
    width = int(config["width"])
    return (
        C_PRELUDE
        + (vector_type(width) if width else "")
        + f"/* matmul order={order} tile={tile} layout={layout} unroll={config['unroll']} "
        f"jam={config['jam']} width={width} "
        f"simd={int(bool(config['simd']))} parallel={int(bool(config['parallel']))} */\n"
        "void kernel(const float* restrict a, const float* restrict b, float* restrict c, int n) {\n"
        + prologue
        + body
        + epilogue
        + "}\n"
    )


def micro_kernel(config: Config) -> str:
    """C[MR x NR] += A[MR x kc] B[kc x NR] with MR*NV vector accumulators (NR = NV*W), FMA per k step.

    Packed: A is an MR-interleaved panel (ap[k*MR + i]) and B an NR-wide panel (bp[k*NR + j]), both
    contiguous. Unpacked: A and B are read in place with their row strides."""
    width, mr, nv = int(config["width"]), int(config["mr"]), int(config["nv"])
    nr, packed, prefetch = nv * width, bool(config["pack"]), int(config["prefetch"])
    if packed:
        args, a_at, b_at = "", (lambda i: f"ap[k * {mr} + {i}]"), (lambda v: f"bp + k * {nr} + {v * width}")
    else:
        args = ", long lda, long ldb"
        a_at, b_at = (lambda i: f"ap[{i} * lda + k]"), (lambda v: f"bp + k * ldb + {v * width}")
    lines = [
        "static inline void micro(int kc, const float* restrict ap, const float* restrict bp,"
        f" float* restrict c, long ldc{args}) {{"
    ]
    lines += ["    vf " + ", ".join(f"c{i}_{v} = {{0}}" for v in range(nv)) + ";" for i in range(mr)]
    lines.append("    for (int k = 0; k < kc; k++) {")
    if prefetch:
        lines.append(f"        __builtin_prefetch(ap + (k + {prefetch}) * {mr if packed else 1});")
        lines.append(f"        __builtin_prefetch(bp + (k + {prefetch}) * {nr if packed else 'ldb'});")
    lines += [f"        vf b{v} = *(const vf*)({b_at(v)});" for v in range(nv)]
    lines += [
        f"        {{ vf ai = (vf){{0}} + {a_at(i)};"
        + "".join(f" c{i}_{v} += ai * b{v};" for v in range(nv))
        + " }"
        for i in range(mr)
    ]
    lines.append("    }")
    lines += [f"    *(vf*)(c + {i} * ldc + {v * width}) += c{i}_{v};" for i in range(mr) for v in range(nv)]
    return "\n".join(lines) + "\n}\n"


def render_blocked(config: Config) -> str:
    """The BLAS-style kernel: KC x MC cache blocks, optional packing, an MR x NR register-blocked
    micro-kernel at the vector width, threads over the MC blocks (`ic`) or the NR strips (`jr`)."""
    width, mr, nv = int(config["width"]), int(config["mr"]), int(config["nv"])
    nr, kc_max = nv * width, int(config["kc"])
    mc_max = max(mr, int(config["mc"]) // mr * mr)
    par = omp_for(config)
    par_ic, par_jr = (par, "") if config["partition"] == "ic" else ("", par)
    head = (
        C_PRELUDE
        + vector_type(width)
        + f"/* matmul register-blocked mr={mr} nr={nr} (width={width} x {nv}) kc={kc_max} mc={mc_max} "
        f"pack={int(bool(config['pack']))} prefetch={config['prefetch']} "
        f"parallel={int(bool(config['parallel']))} partition={config['partition']} */\n"
        + micro_kernel(config)
    )
    if config["pack"]:
        # Edge tiles run the same micro-kernel into a local tile (the panels are zero-padded).
        return (
            head
            + f"""
static void edge(int kc, const float* restrict ap, const float* restrict bp, float* restrict c, long ldc, int mr, int nr) {{
    float t[{mr * nr}] __attribute__((aligned(64)));
    memset(t, 0, sizeof t);
    micro(kc, ap, bp, t, {nr});
    for (int i = 0; i < mr; i++) for (int j = 0; j < nr; j++) c[i * ldc + j] += t[i * {nr} + j];
}}

void kernel(const float* restrict a, const float* restrict b, float* restrict c, int n) {{
    const int KC = {kc_max}, MC = {mc_max}, MR = {mr}, NR = {nr};
    long strips = (n + NR - 1) / NR;
    float* bpack = aligned_alloc(64, sizeof(float) * (size_t)KC * NR * strips);
    memset(c, 0, sizeof(float) * (size_t)n * n);
    for (int pc = 0; pc < n; pc += KC) {{
        int kc = n - pc < KC ? n - pc : KC;
{indent(omp_for(config, "static"), 8)}        for (long s = 0; s < strips; s++) {{
            float* dst = bpack + s * kc * NR;
            long j0 = s * NR;
            int nr = n - j0 < NR ? (int)(n - j0) : NR;
            for (int k = 0; k < kc; k++) {{
                const float* src = b + (long)(pc + k) * n + j0;
                for (int j = 0; j < nr; j++) dst[k * NR + j] = src[j];
                for (int j = nr; j < NR; j++) dst[k * NR + j] = 0.0f;
            }}
        }}
{indent(par_ic, 8)}        for (int ic = 0; ic < n; ic += MC) {{
            int mc = n - ic < MC ? n - ic : MC;
            float* apack = aligned_alloc(64, sizeof(float) * (size_t)MC * KC);
            for (int ir = 0; ir < mc; ir += MR) {{
                float* dst = apack + (long)ir * kc;
                int mr = mc - ir < MR ? mc - ir : MR;
                for (int k = 0; k < kc; k++) {{
                    for (int i = 0; i < mr; i++) dst[k * MR + i] = a[(long)(ic + ir + i) * n + pc + k];
                    for (int i = mr; i < MR; i++) dst[k * MR + i] = 0.0f;
                }}
            }}
{indent(par_jr, 12)}            for (long s = 0; s < strips; s++) {{
                long j0 = s * NR;
                int nr = n - j0 < NR ? (int)(n - j0) : NR;
                const float* bp = bpack + s * kc * NR;
                for (int ir = 0; ir < mc; ir += MR) {{
                    int mr = mc - ir < MR ? mc - ir : MR;
                    float* cp = c + (long)(ic + ir) * n + j0;
                    if (mr == MR && nr == NR) micro(kc, apack + (long)ir * kc, bp, cp, n);
                    else edge(kc, apack + (long)ir * kc, bp, cp, n, mr, nr);
                }}
            }}
            free(apack);
        }}
    }}
    free(bpack);
}}
"""
        )
    # Unpacked: the micro-kernel reads A and B in place on the full tiles; the right and bottom
    # edge strips (n % NR columns, n % MR rows) are plain loops.
    return (
        head
        + f"""
void kernel(const float* restrict a, const float* restrict b, float* restrict c, int n) {{
    const int KC = {kc_max}, MC = {mc_max}, MR = {mr}, NR = {nr};
    const int m_full = n - n % MR, n_full = n - n % NR;
    memset(c, 0, sizeof(float) * (size_t)n * n);
    for (int pc = 0; pc < n; pc += KC) {{
        int kc = n - pc < KC ? n - pc : KC;
{indent(par_ic, 8)}        for (int ic = 0; ic < m_full; ic += MC) {{
            int mc = m_full - ic < MC ? m_full - ic : MC;
{indent(par_jr, 12)}            for (int j0 = 0; j0 < n_full; j0 += NR)
                for (int ir = 0; ir < mc; ir += MR)
                    micro(kc, a + (long)(ic + ir) * n + pc, b + (long)pc * n + j0, c + (long)(ic + ir) * n + j0, n, n, n);
        }}
    }}
{indent(par, 4)}    for (int i = 0; i < n; i++) {{
        int j_lo = i < m_full ? n_full : 0;
        for (int k = 0; k < n; k++) {{
            float aik = a[(long)i * n + k];
            for (int j = j_lo; j < n; j++) c[(long)i * n + j] += aik * b[(long)k * n + j];
        }}
    }}
}}
"""
    )


def render_c(config: Config) -> str:
    return render_blocked(config) if int(config["mr"]) else render_loops(config)


def _register_block(config: Config, params: Mapping[str, Any]) -> Config | None:
    mr, nv = int(params.get("mr", 6)), int(params.get("nv", 2))
    if mr * nv > MAX_ACCUMULATORS:
        return None
    # The loop-nest knobs mean nothing to the blocked kernel: reset, so one kernel has one config.
    return with_(config, **LOOP_KNOBS, mr=mr, nv=nv, width=int(config["width"]) or DEFAULT_BLOCK_WIDTH)


def _loop_kernel(config: Config) -> bool:
    return not int(config["mr"])


def _blocked(config: Config) -> bool:
    return bool(int(config["mr"]))


def _vector_width_applies(config: Config) -> bool:
    # Explicit vectors need a contiguous j loop: the blocked kernel, or ikj order on row-major B.
    return _blocked(config) or (config["order"] == "ikj" and config["layout"] == "row")


def _vector_width(config: Config, params: Mapping[str, Any]) -> Config | None:
    if not _vector_width_applies(config):
        return None
    width = int(params.get("width", VECTOR_WIDTHS[0]))
    if _blocked(config):
        return with_(config, width=width)
    return with_(config, width=width, simd=False, unroll=1)


BASELINE: Config = {
    "order": "ijk",
    "tile": 0,
    "layout": "row",
    "unroll": 1,
    "simd": False,
    "parallel": False,
    "schedule": "static",
    "jam": 1,
    "width": 0,
    "mr": 0,
    "nv": 1,
    "pack": False,
    "kc": 256,
    "mc": 96,
    "prefetch": 0,
    "partition": "ic",
}
# Register blocking on a loop kernel without explicit vectors starts at the AVX2 width (8 lanes):
# every x86-64-v3 target runs it natively, and `vector_width` moves it to the target's own width.
DEFAULT_BLOCK_WIDTH = 8
BEST_KNOWN: Config = {**BASELINE, "order": "ikj", "tile": 64, "unroll": 4, "simd": True, "parallel": True}


# Compute-bound: serial code wins while the whole problem sits in L1; tiling and threads pay later.
INSTANCES = (
    Instance("48", (48,), "L1"),
    Instance("112", (112,), "L2"),
    Instance("208", (208,), "L2"),
    Instance("1024", (1024,), "LLC"),
)


LIBRARY = LibraryCall(
    numpy=lambda x: {"c": x["a"] @ x["b"]},
    numpy_call="a @ b",
    torch=lambda torch, x: {"c": torch.mm(x["a"], x["b"])},
    torch_call="torch.mm(a, b)",
)


def task() -> Task:
    return define_task(
        name="matmul",
        family="dense-matmul",
        patterns=("dense-2d", "reuse-blocked", "row-major-stream", "column-stride"),
        description="C = A @ B for square fp32 matrices (n=300; small n=72).",
        inputs_at=inputs_at,
        small=(N_SMALL,),
        full=(N_FULL,),
        output_shapes=shaped_like("a", "c"),
        reference=reference,
        # Signs random, magnitudes 2^-10..2^10: many outputs are sums that cancel to near zero.
        edge_inputs=signed_wide_inputs("a", "b"),
        error_scale=product_sums_scale("c", "a", "b"),
        library=LIBRARY,
        flops=lambda x: 2.0 * x["a"].shape[0] ** 3,
        bytes_moved=lambda x: 3.0 * 4 * x["a"].size,
        sizes=lambda x: {"n": x["a"].shape[0]},
        baseline_config=BASELINE,
        transforms=(
            set_knob(Transform.INTERCHANGE, "order", ("ikj", "ijk"), requires=_loop_kernel),
            set_knob(Transform.TILE, "tile", (64, 16, 128, 0), requires=_loop_kernel),
            set_knob(
                Transform.UNROLL, "unroll", (4, 1), requires=lambda c: _loop_kernel(c) and not c["width"]
            ),
            turn_on(Transform.VECTORIZE, "simd", requires=lambda c: _loop_kernel(c) and not c["width"]),
            parallelize(),
            schedule(),
            set_knob(
                Transform.CHANGE_LAYOUT,
                "layout",
                ("transposed", "row"),
                requires=lambda c: _loop_kernel(c) and not c["width"],
            ),
            set_knob(
                Transform.UNROLL_AND_JAM,
                "jam",
                (4, 2, 1),
                requires=lambda c: _loop_kernel(c) and c["order"] == "ikj",
            ),
            vector_width(_vector_width, "The micro-kernel (or the ikj j loop)"),
            TransformSpec(
                name=str(Transform.REGISTER_BLOCK),
                params={"mr": (6, 4, 8, 12, 14), "nv": (2, 1, 3, 4)},
                apply=_register_block,
                description="An MR x (NV vectors) accumulator tile in registers, FMA per k (BLAS micro-kernel).",
            ),
            turn_on(Transform.PACK, "pack", requires=_blocked),
            TransformSpec(
                name=str(Transform.BLOCK_FOR_CACHE),
                params={"kc": (256, 128, 512), "mc": (96, 48, 192)},
                apply=lambda c, p: with_(c, kc=p.get("kc", 256), mc=p.get("mc", 96)) if _blocked(c) else None,
                description="KC x MC cache blocks: the packed A block stays in L2, a B panel strip in L1.",
            ),
            set_knob(Transform.PREFETCH, "prefetch", (8, 16, 4, 0), requires=_blocked),
            set_knob(
                Transform.PARTITION_THREADS,
                "partition",
                ("jr", "ic"),
                requires=lambda c: _blocked(c) and bool(c["parallel"]),
            ),
        ),
        render_c=render_c,
        instances=INSTANCES,
    )
