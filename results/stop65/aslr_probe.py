"""Stop 65: is the layout lottery of stop 64 (isolated over in-process: layernorm best-B x1.22,
elementwise_chain baseline x0.78, ...) the isolated child's one fixed address layout against the
in-process child's randomised ones? Arms, rotated per repeat: the isolated protocol as shipped (fixed
layout), the isolated protocol with address randomisation on, the in-process protocol as shipped
(randomised), the in-process protocol with randomisation off. Output: aslr_probe.out.
Usage: python aslr_probe.py REPEATS task:config ...   (as root)"""

import statistics
import sys
import tempfile
from dataclasses import replace
from pathlib import Path

from kernelgraph.agent.backends.bubblewrap import Sandbox
from kernelgraph.agent.backends.c import CBackend
from kernelgraph.agent.backends.timing import IN_PROCESS, ISOLATED
from kernelgraph.agent.targets import get_target
from kernelgraph.agent.tasks import get_task
from kernelgraph.bench.configs import checked_configs
from kernelgraph.bench.sandbox import BENCH_TIMING, _evaluate_once


class Layout(Sandbox):
    """Every process it starts has the given layout, whatever the caller asked."""

    def __init__(self, fixed: bool) -> None:
        super().__init__()
        self.fixed = fixed

    def popen(self, argv, **kwargs):  # type: ignore[no-untyped-def, override]
        kwargs["fixed_layout"] = self.fixed
        return super().popen(argv, **kwargs)


target = get_target("cpu-x86-64-v2")
ARMS = {"isolated": (ISOLATED, Sandbox()), "isolated-aslr": (ISOLATED, Layout(False)),
        "in-process": (IN_PROCESS, Sandbox()), "in-process-fixed": (IN_PROCESS, Layout(True))}
repeats = int(sys.argv[1])
with tempfile.TemporaryDirectory() as tmp:
    for cell in sys.argv[2:]:
        name, label = cell.split(":")
        task = get_task(name)
        source = task.source("c", checked_configs(task)[label])
        backends = {arm: CBackend(cache_dir=Path(tmp) / cell / arm, counters=False, sandbox=sandbox,
                                  timing=replace(BENCH_TIMING, protocol=protocol))
                    for arm, (protocol, sandbox) in ARMS.items()}
        runs: dict[str, list[float]] = {arm: [] for arm in ARMS}
        for repeat in range(repeats):
            order = list(ARMS)[repeat % len(ARMS):] + list(ARMS)[: repeat % len(ARMS)]
            for arm in order:
                runs[arm].append(_evaluate_once(task, target, source, backends[arm])["median_ns"] / 1e3)
        base = statistics.median(runs["in-process"])
        print(f"{cell}: {repeats} repeats; medians (us) " + ", ".join(
            f"{arm} {statistics.median(v):.1f} (x{statistics.median(v) / base:.3f}; {min(v):.1f}-{max(v):.1f})"
            for arm, v in runs.items()), flush=True)
        for arm, v in runs.items():
            print(f"  {arm}: " + " ".join(f"{x:.0f}" for x in v), flush=True)
