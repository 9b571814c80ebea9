"""Asking the evaluator again when the host, not the kernel, left a comparison unjudged."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Protocol, TypeVar

from kernelgraph.agent.loop import median_interval
from kernelgraph.agent.results import Evaluation


class Verdict(Protocol):
    @property
    def judged(self) -> bool: ...

    @property
    def reason(self) -> str: ...


V = TypeVar("V", bound=Verdict)

# What every refusal for the host's sake says (cores not free, or the hypervisor taking them).
REFUSED_FOR_THE_HOST = "a comparison is made only on"


def when_the_host_was_quiet(
    run: Callable[[], V], refused_for: str = REFUSED_FOR_THE_HOST, tries: int = 3
) -> V:
    """`run`'s verdict (an evaluation or a profile), run again (at most `tries` times) while the host
    refused it (its reason holds `refused_for`: by default the host's load or steal): a comparison a
    test needs judged needs a host quiet for a second or two, which a loaded CI machine is not always
    (a verdict judged there is what is tested; one refused for the host is the rule at work)."""
    for _ in range(tries - 1):
        verdict = run()
        if verdict.judged or refused_for not in verdict.reason:
            return verdict
        time.sleep(1.0)
    return run()


def judged(run: Callable[[], V], tries: int = 3) -> V:
    """`run`'s verdict, asked again while the host refused it, and judged: a defended arm that took a
    verdict left unjudged (no speedup at all) as "no fake speedup" would pass having tested nothing."""
    verdict = when_the_host_was_quiet(run, tries=tries)
    assert verdict.judged, f"not judged in {tries} runs: {verdict.reason}"
    return verdict


def paired_gain(verdict: Evaluation) -> float:
    """The median of the verdict's paired ratios, as the keep rule reads it (`median_interval`) (parent time / candidate time of each round), the
    evidence the keep rule judges: a round's two calls are made at one moment of the host, so load
    that comes and goes moves both. A "no fake speedup" bound is held on this, not on the stored
    pair (the ratio of the two kernels' medians over 5-12 calls each), which load moves alone:
    beside a test suite on CI (stop 65) thread_per_call.c's stored pair read 1.105x, its pairs
    0.954x, and 0.95-0.98x both on a quiet host (results/stop66/thread_per_call_probe.out)."""
    assert verdict.profile is not None and verdict.profile.paired_ratios, verdict
    return median_interval(verdict.profile.paired_ratios)[1]
