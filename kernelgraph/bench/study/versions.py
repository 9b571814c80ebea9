"""Study v3's version guard (docs/study-v3.md, decision 3): every landscape point the study writes records
the evaluator and signature versions of the code that measured it, and the study refuses to resume or
read a landscape file whose points mix versions or differ from the running code's. A timing measured by
another evaluator, or a state keyed by another signature, is not the same measurement: mixing them would
compare unlike figures without saying so."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from pathlib import Path
from typing import Protocol

from kernelgraph.agent.evaluator import EVALUATOR_VERSION
from kernelgraph.core.signature import SIGNATURE_VERSION


class Versioned(Protocol):
    """A landscape point or a counter state (kernelgraph/bench/landscapes.py: Point, State)."""

    @property
    def evaluator_version(self) -> int | None: ...
    @property
    def signature_version(self) -> int | None: ...


class LandscapeVersionError(ValueError):
    """A landscape file measured (in whole or in part) by code of other versions than the running code's."""


# Evaluator versions whose in-process protocol (the one the landscapes are timed with: LANDSCAPE_TIMING)
# measures a kernel as the running code's does. Version 7 changed only the isolated protocol (each
# call's inputs at an offset the evaluator draws) and what the plausibility checks read, which for the
# in-process protocol was already the charged time (agent/evaluator.py): a landscape point of 6 is one
# of 7. Version 8 changed only which of the isolated protocol's pairs of calls count (those timed on
# free cores), never how the in-process protocol times a landscape's point: a point of 7 is one of
# 8. Version 9 changed only the isolated protocol's buffers before a call (read back after they are
# written): a point of 8 is one of 9. Version 10 changed where the isolated protocol's children run
# (their address layout, a serial kernel's CPU) and, in both protocols, what a kernel's child may do
# with CPU affinity (not set it; OpenMP told not to bind): no landscape config sets affinity, and
# libgomp bound no thread in the sandbox before (it sees no CPU topology there), so a point of 9 is
# one of 10. Version 11 changed only the isolated protocol (its calibration of a call's overhead:
# fewer, shorter stand-in calls, the same figures within their spread; the order of its pairs and of
# its children's start, drawn) and how fast histogram's reference counts (the same counts): a point
# of 10 is one of 11. Version 12 changed only which isolated comparisons are judged (none across
# clocks while the hypervisor took over 5% of the CPUs): a point of 11 is one of 12. Version 13 changed
# only which isolated comparisons are judged and which of their pairs count (none beside which other
# tasks ran; steal judged wherever a kernel is parallel; a landscape point is one kernel's profile, no
# comparison), and admission 6 refuses only code beyond its target's x86-64 level, which no landscape
# config has (each builds for its target's -march): a point of 12 is one of 13. Version 14 changed only
# the isolated protocol's inputs (one read-only copy for both kernels, no comparison after each call):
# a point of 13 is one of 14. Version 15 changed only where the isolated protocol places a parallel
# kernel's threads (a CPU each): a point of 14 is one of 15. Version 16 changed only the isolated
# protocol's child (a C program without clocks for the kernel; the in-process protocol's child is
# the Python one it was): a point of 15 is one of 16. Version 17 starts every timed call from a
# declared cold state (its arrays flushed from the caches) in every plan but LANDSCAPE_TIMING, which
# keeps the warm state (`TimingPlan.cold` off: the in-process child flushes nothing, as at 16): a
# point of 16 is one of 17. Version 18 calls every kernel with its stack at one declared place within
# a page (agent/backends/kernel_call.h), the one the isolated protocol's child had; the in-process
# child's was wherever the process's randomised stack put it, drawn anew for each child, so each point
# of 17 was measured at one such drawn place and 18's is one of them: a point of 17 is one of 18.
# Version 19 changed only where the isolated protocol's evaluator waits for a call's answer (on the
# call's CPU): a point of 18 is one of 19. Version 20 changed only the length of the isolated
# protocol's buffer files (whole huge pages, so the kernel's arrays are on them): a point of 19 is one
# of 20. Version 21 changed only the isolated protocol run without the sandbox (its tree holds the
# kernel's process): a point of 20 is one of 21. Version 22 lets every sandboxed step's loader read
# /etc/ld.so.cache, which moves the libraries a step's loader maps at its start by a fixed 9 pages
# relative to each other (measured in the isolated child and in `cat`, not in the in-process one); that child's address space is randomised anew for each child (only the isolated one's is
# fixed), so the addresses its kernel ran at are drawn from the same spread: a point of 21 is one of 22.
# (Not measured on landscape points; the 9 pages are fixed, and docs/sandbox.md "Stop 64" found the
# libraries' relative places matter to an isolated child: study v3's landscapes at 22 would show it.)
# Version 23 changed only the isolated protocol's child (the counter off before its stand-ins run);
# landscapes are timed by the in-process protocol (LANDSCAPE_TIMING): a point of 22 is one of 23.
# Version 24 changed only the overhead the isolated protocol takes off a call of a kernel with
# several threads: a point of 23 is one of 24.
# A version is added here only with that argument written beside it.
SAME_LANDSCAPE_MEASUREMENT: frozenset[int] = frozenset(
    {6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24}
)


def _as_running(evaluator: int | None) -> int | None:
    """A point's evaluator version, read as the running code's where the two measure landscapes alike."""
    same = EVALUATOR_VERSION in SAME_LANDSCAPE_MEASUREMENT and evaluator in SAME_LANDSCAPE_MEASUREMENT
    return EVALUATOR_VERSION if same else evaluator


def recorded_versions() -> dict[str, int]:
    """The fields every point the study writes carries: the running code's versions."""
    return {"evaluator_version": EVALUATOR_VERSION, "signature_version": SIGNATURE_VERSION}


def _described(versions: tuple[int | None, int | None]) -> str:
    evaluator, signature = ("unknown" if v is None else str(v) for v in versions)
    return f"evaluator {evaluator}, signature {signature}"


def check_versions(path: Path, points: Iterable[Versioned]) -> None:
    """Refuse (LandscapeVersionError naming `path`) a loaded set of points that mix versions or differ
    from the running code's; a point without the fields counts as version unknown. No points: nothing
    to refuse (a file about to be started)."""
    found = Counter((p.evaluator_version, p.signature_version) for p in points)
    running = (EVALUATOR_VERSION, SIGNATURE_VERSION)
    read_as = {(_as_running(e), s) for e, s in found}
    if not found or read_as == {running}:
        return
    by_version = sorted(
        found.items(), key=lambda item: tuple(-1 if v is None else v for v in item[0])
    )  # 9 before 10
    seen = "; ".join(f"{_described(v)} ({n} points)" for v, n in by_version)
    why = "mixes versions" if len(read_as) > 1 else "was measured with other versions"
    raise LandscapeVersionError(
        f"{path} {why}: {seen}; the running code is {_described(running)}. Study v3 neither resumes nor "
        "reads such a landscape (docs/study-v3.md, decision 3): measure it again into a new directory, "
        "or run the code of its versions"
    )
