"""The `Backend` protocol: compile, check and profile one kernel source for one target."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

from kernelgraph.agent.evaluator import DEFAULT_SEEDS
from kernelgraph.agent.results import CheckResult, CompileResult, ProfileResult
from kernelgraph.agent.targets import Target
from kernelgraph.agent.tasks.base import Task


@runtime_checkable
class Backend(Protocol):
    """Every method returns a typed result; a crash, hang or compile error is an `Outcome`, not a raise."""

    name: str

    def compile(self, task: Task, source: str, target: Target) -> CompileResult: ...

    def check(
        self, task: Task, source: str, target: Target, seeds: Sequence[int] = DEFAULT_SEEDS
    ) -> CheckResult: ...

    def profile(
        self, task: Task, source: str, target: Target, parent_source: str | None = None,
        reference_source: str | None = None,
    ) -> ProfileResult:  # fmt: skip
        """`source` timed interleaved with `parent_source`; with `reference_source` (trusted code)
        too, as a third kernel of each round of calls, where the backend can time three
        (`ProfileResult.reference_ratios`; a backend that cannot leaves them empty)."""
        ...
