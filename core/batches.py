"""Splitting a write into batches the service accepts: one rule for every client."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import TypeVar

from kernelgraph.core.models import MAX_BATCH

T = TypeVar("T")
R = TypeVar("R")


def in_batches(items: Sequence[T], record: Callable[[Sequence[T]], Iterable[R]]) -> list[R]:
    """`record` called on each run of at most MAX_BATCH consecutive `items` (what one request may hold;
    each batch is all-or-nothing), in order; its results, concatenated."""
    results: list[R] = []
    for start in range(0, len(items), MAX_BATCH):
        results.extend(record(items[start : start + MAX_BATCH]))
    return results
