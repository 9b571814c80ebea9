"""Study v3's CPU targets: a march level (agent/targets.py) at a number of threads. The evaluator runs a
kernel with as many threads as its target has cores (agent/backends/c.py), so cpu-native at 1 and at 2
threads are two targets of one host whose best transforms may differ (threads pay or not by size)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from kernelgraph.agent.targets import Target, get_target, host_cores


def study_target_name(base: str, threads: int) -> str:
    return f"{base}-{threads}t"  # a service Name: letters, digits, _.:+-


@dataclass(frozen=True)
class StudyTarget:
    name: str
    base: str
    threads: int
    target: Target
    available: bool
    why_not: str = ""


def study_target(base: str, threads: int, *, measure: bool = True) -> StudyTarget:
    """`base` run with `threads` threads. Its compute peak is the base's scaled to the threads (the FMA
    probe's figure is over all cores); bandwidths stay the host's, an upper bound either way."""
    target = get_target(base, measure=measure)
    cores = host_cores()
    name = study_target_name(base, threads)
    if not target.available:
        return StudyTarget(name, base, threads, target, False, target.unavailable_reason)
    if threads > cores:
        return StudyTarget(name, base, threads, target, False, f"the host has {cores} cores, not {threads}")
    scale = threads / (target.cores or cores)
    peak = target.peak_gflops * scale if target.peak_gflops else None
    return StudyTarget(name, base, threads, replace(target, name=name, cores=threads, peak_gflops=peak), True)


def study_targets(wanted: Sequence[tuple[str, int]], *, measure: bool = True) -> list[StudyTarget]:
    """Each wanted (base, threads), available or not (with why not), in the protocol's order."""
    return [study_target(base, threads, measure=measure) for base, threads in wanted]
