"""Is the isolated protocol's slower reading of serial compute kernels (matmul best-A: 1.035 paired
over in-process in clock_probe.out) its confinement? Evaluations as `kernelgraph bench sandbox` makes
them (check + profile against itself, 30 trials), arms rotating per repeat: in-process and isolated
with the sandbox as it is, and the isolated protocol with its seccomp filters off, and with no
sandbox at all (bubblewrap off: the debug escape hatch). Paired ratios over in-process.
Usage: python confinement_probe.py REPEATS task:config ..."""

import itertools
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

ARMS = {
    "in-process": (IN_PROCESS, Sandbox()),
    "isolated": (ISOLATED, Sandbox()),
    "isolated-no-seccomp": (ISOLATED, Sandbox(seccomp=False)),
    "isolated-no-sandbox": (ISOLATED, Sandbox(enabled=False)),
}
target = get_target("cpu-x86-64-v2")
repeats = int(sys.argv[1])
with tempfile.TemporaryDirectory() as tmp:
    backends = {arm: CBackend(cache_dir=Path(tmp), counters=False, sandbox=sandbox,
                              timing=replace(BENCH_TIMING, min_trials=30, max_trials=30, protocol=protocol))
                for arm, (protocol, sandbox) in ARMS.items()}
    orders = list(itertools.permutations(ARMS))
    for cell in sys.argv[2:]:
        name, label = cell.split(":")
        task = get_task(name)
        source = task.source("c", checked_configs(task)[label])
        runs = {arm: [] for arm in ARMS}
        for repeat in range(repeats):
            for arm in orders[(repeat * 5) % len(orders)]:
                try:
                    runs[arm].append(_evaluate_once(task, target, source, backends[arm])["median_ns"])
                except RuntimeError as e:
                    print(f"  {arm}: {e}"[:300], flush=True)
                    runs[arm].append(float("nan"))
        print(f"{name} {label}:", flush=True)
        for arm in ARMS:
            ratios = [v / r for v, r in zip(runs[arm], runs["in-process"])]
            print(f"  {arm:20s} median {statistics.median(runs[arm]) / 1e3:7.0f} us  paired over in-process {statistics.median(ratios):.3f}"
                  f"  [{' '.join(f'{x:.3f}' for x in ratios)}]", flush=True)
