"""The shared transform vocabulary: the names every task uses in its `TransformSpec.name`.

Experience transfers between kernels only if "tile" on a matmul and "tile" on a transpose are the
same word, so tasks must pick names from `Transform` (a test checks it) and never invent their own.
"""

from __future__ import annotations

from enum import StrEnum


class Transform(StrEnum):
    """One code transformation, meaningful across kernels; `description` says what it does."""

    TILE = "tile"
    INTERCHANGE = "interchange"
    UNROLL = "unroll"
    VECTORIZE = "vectorize"
    PARALLELIZE = "parallelize"
    SCHEDULE = "schedule"
    FUSE = "fuse"
    BLOCK_FOR_CACHE = "block_for_cache"
    CHANGE_LAYOUT = "change_layout"
    SPLIT_REDUCTION = "split_reduction"
    PRIVATIZE = "privatize"
    STRENGTH_REDUCE = "strength_reduce"
    NONTEMPORAL = "nontemporal"
    REGISTER_BLOCK = "register_block"
    PACK = "pack"
    VECTOR_WIDTH = "vector_width"
    VECTOR_MATH = "vector_math"
    ONE_PASS = "one_pass"
    PREFETCH = "prefetch"
    UNROLL_AND_JAM = "unroll_and_jam"
    PARTITION_THREADS = "partition_threads"

    @property
    def description(self) -> str:
        return _DESCRIPTIONS[self]


_DESCRIPTIONS: dict[Transform, str] = {
    Transform.TILE: "Split loops into fixed-size blocks so a block's working set stays in cache.",
    Transform.INTERCHANGE: "Reorder nested loops so the innermost loop walks memory contiguously.",
    Transform.UNROLL: "Replicate the innermost loop body to cut loop overhead and expose ILP.",
    Transform.VECTORIZE: "Make the innermost loop SIMD (#pragma omp simd / vector-friendly form).",
    Transform.PARALLELIZE: "Run independent outer iterations on all cores (OpenMP parallel for).",
    Transform.SCHEDULE: "Change how parallel iterations are split among threads (static/dynamic).",
    Transform.FUSE: "Merge passes over the same data into one pass, cutting memory traffic.",
    Transform.BLOCK_FOR_CACHE: "Process data in cache-sized chunks so multi-pass work re-reads cache.",
    Transform.CHANGE_LAYOUT: "Copy an operand into a layout the hot loop reads contiguously.",
    Transform.SPLIT_REDUCTION: "Use several independent accumulators to break the add latency chain.",
    Transform.PRIVATIZE: "Give each thread or lane a private copy of a shared output, merged at the end.",
    Transform.STRENGTH_REDUCE: "Replace an expensive operation (divide) by a cheaper one (multiply).",
    Transform.NONTEMPORAL: "Write a streamed output with non-temporal stores that bypass the cache.",
    Transform.REGISTER_BLOCK: (
        "Compute an MR x NR tile of the output in MR*NR/W vector-register accumulators, one FMA per"
        " loaded operand pair per k step (the BLAS micro-kernel)."
    ),
    Transform.PACK: (
        "Copy operand blocks into contiguous, zero-padded panels in the order the micro-kernel reads"
        " them: unit-stride loads, no TLB or cache-set conflicts, no edge cases inside the hot loop."
    ),
    Transform.VECTOR_WIDTH: (
        "Write the hot loop with explicit vectors of the target's width (GCC vector extensions or"
        " intrinsics): 4 fp32 lanes for SSE, 8 for AVX2, 16 for AVX-512."
    ),
    Transform.VECTOR_MATH: (
        "Replace scalar libm calls (exp, log, rsqrt) by an inlined polynomial or hardware estimate"
        " that vectorizes, keeping the error within the task's tolerance."
    ),
    Transform.ONE_PASS: (
        "Compute a multi-pass reduction in one pass over the data (online softmax, Welford mean and"
        " variance), rescaling the running state instead of re-reading the input."
    ),
    Transform.PREFETCH: "Issue software prefetches a fixed distance ahead of the streams the hot loop reads.",
    Transform.UNROLL_AND_JAM: (
        "Unroll an outer loop and fuse the copies into the inner loop, so one load of the inner"
        " operand feeds several outer iterations."
    ),
    Transform.PARTITION_THREADS: (
        "Choose which outer block loop the threads split (rows, columns or both), so each thread"
        " owns contiguous blocks and shares packed panels instead of duplicating them."
    ),
}
