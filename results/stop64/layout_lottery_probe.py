"""Stop 64: did evaluator 22 (the loader reads its cache in the sandbox) move other cells' isolated
medians, as it moved matmul best-A's? The declared bench at 22 read layernorm best-B x1.228, best-A
x1.072, matmul best-B x1.054 and elementwise_chain baseline x0.781 (isolated over in-process). Here the
isolated protocol as shipped, the isolated protocol with 21's sandbox (/etc left to bwrap: no cache), and
the in-process protocol, arms rotated per repeat. Output: layout_lottery_probe.out.
Usage: python layout_lottery_probe.py REPEATS task:config ...   (as root)"""

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


class NoCache(Sandbox):
    """Evaluator 21's sandbox: /etc made by bwrap (0700, root's), so a step's loader has no cache."""

    def command(self, argv, **kwargs):  # type: ignore[no-untyped-def, override]
        cmd = super().command(argv, **kwargs)
        at = cmd.index("/etc/ld.so.cache") - 1  # --ro-bind; before it: --perms 0755 --dir /etc
        assert cmd[at - 4 : at] == ["--perms", "0755", "--dir", "/etc"], cmd[at - 4 : at]
        return cmd[: at - 4] + cmd[at:]


target = get_target("cpu-x86-64-v2")
ARMS = {"isolated": (ISOLATED, Sandbox()), "isolated-21": (ISOLATED, NoCache()), "in-process": (IN_PROCESS, Sandbox())}
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
