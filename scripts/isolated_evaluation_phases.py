"""Where an evaluation's wall time goes under each timing protocol (docs/sandbox.md, "What 20 repeats
resolve"): one cell of `kernelgraph bench sandbox` (a check, then a profile against itself at the
bench's trial count), evaluated REPEATS times per protocol, with the isolated protocol's phases timed
by wrapping its functions (a phase inside another counts as the outer one's: the stand-ins' calls are
the stand-ins' time); each figure is the median over the evaluations. Measures this machine; run it quiet:

    python scripts/isolated_evaluation_phases.py [task] [config label]   # default: matmul best-B
"""

from __future__ import annotations

import statistics
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import kernelgraph.agent.backends.isolated as isolated
from kernelgraph.agent.backends.c import CBackend
from kernelgraph.agent.backends.timing import IN_PROCESS, ISOLATED
from kernelgraph.agent.targets import get_target
from kernelgraph.agent.tasks import get_task
from kernelgraph.bench.configs import checked_configs
from kernelgraph.bench.sandbox import BENCH_TIMING

REPEATS = 10
PHASES = {  # (owner, function): what its time is called in the table
    (isolated.KernelServer, "__init__"): "start the children",
    (isolated.KernelServer, "wait_ready"): "wait until they are ready",
    (isolated, "call_overhead"): "call-overhead stand-ins",
    (isolated.KernelServer, "load_kernel"): "load the kernels",
    (isolated.KernelServer, "call"): "the kernels' calls (timed, verify)",
    (isolated.CallChecker, "write"): "write each call's inputs",
    (isolated.CallChecker, "check"): "check each call's outputs",
    (isolated.KernelServer, "close"): "stop the children",
}


def _timed(
    spent: dict[str, float], active: list[str], label: str, function: Callable[..., Any]
) -> Callable[..., Any]:
    """`function` timed into spent[label], unless another phase is running: a phase nested in
    another (the stand-ins' calls and input writes, inside `call_overhead`) is the outer one's time."""

    def wrapper(*args: Any, **kwargs: Any) -> Any:
        if active:
            return function(*args, **kwargs)
        active.append(label)
        start = time.perf_counter()
        try:
            return function(*args, **kwargs)
        finally:
            spent[label] += time.perf_counter() - start
            active.pop()

    return wrapper


def main() -> None:
    task = get_task(sys.argv[1] if len(sys.argv) > 1 else "matmul")
    label = sys.argv[2] if len(sys.argv) > 2 else "best-B"
    source = task.source("c", checked_configs(task)[label])
    target = get_target("cpu-x86-64-v2")
    spent: dict[str, float] = defaultdict(float)
    active: list[str] = []
    for (owner, name), phase in PHASES.items():
        setattr(owner, name, _timed(spent, active, phase, getattr(owner, name)))
    print(
        f"{task.name} {label} on {target.name}, {BENCH_TIMING.min_trials} trials, median of {REPEATS} evaluations (s)"
    )
    with tempfile.TemporaryDirectory() as cache:
        for protocol in (ISOLATED, IN_PROCESS):
            backend = CBackend(
                cache_dir=Path(cache), counters=False, timing=replace(BENCH_TIMING, protocol=protocol)
            )
            backend.compile(task, source, target)
            figures: dict[str, list[float]] = defaultdict(list)
            for _ in range(REPEATS):
                spent.clear()
                start = time.perf_counter()
                backend.check(task, source, target)
                checked = time.perf_counter()
                backend.profile(task, source, target, parent_source=source)
                figures["evaluation (check + profile)"].append(time.perf_counter() - start)
                figures["check"].append(checked - start)
                figures["profile"].append(time.perf_counter() - checked)
                for phase, seconds in spent.items():
                    figures[f"  {phase}"].append(seconds)
            print(protocol)
            for what, values in figures.items():
                print(f"  {what:<36} {statistics.median(values):.3f}")


if __name__ == "__main__":
    main()
