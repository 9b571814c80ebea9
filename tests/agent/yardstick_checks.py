"""The one check every report's yardsticks (agent/library.py `Yardsticks.to_json`) must pass."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest

from kernelgraph.agent.evaluator import MAX_LEVEL_BANDWIDTH_FRACTION
from kernelgraph.core.signature import MAX_COMPUTE_FRACTION

# No kernel the evaluator lets through runs beyond these fractions of the peaks, so none is further
# above the roofline's least time.
MAX_ROOFLINE_FRACTION = max(MAX_LEVEL_BANDWIDTH_FRACTION, MAX_COMPUTE_FRACTION)


def assert_yardsticks(marks: Mapping[str, Any] | None, *, library: bool = True) -> None:
    """The library speedup is the library's median over the kernel's, the naive speedup likewise, and
    the roofline fraction is in (0, MAX_ROOFLINE_FRACTION]; `library`: a library figure is expected."""
    assert marks is not None, "no yardsticks"
    median = marks["median_ns"]
    assert median > 0
    if library:
        assert marks["library"] and marks["library_median_ns"] > 0, marks
        assert marks["speedup_vs_library"] == pytest.approx(marks["library_median_ns"] / median)
    if marks["naive_median_ns"] is not None:
        assert marks["speedup_vs_naive"] == pytest.approx(marks["naive_median_ns"] / median)
    assert 0.0 < marks["roofline_fraction"] <= MAX_ROOFLINE_FRACTION, marks
    assert marks["achieved_gflops"] >= 0.0 and marks["achieved_gbps"] > 0.0
