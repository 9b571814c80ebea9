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
}
