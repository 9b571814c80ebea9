"""Stop 61: with the isolated protocol's buffer files rounded up to whole huge pages (evaluator 20,
`isolated.file_bytes`), do the cells that read it a few per cent slower than the in-process protocol
read level? Arms rotating per repeat: in-process, isolated. Evaluations as `kernelgraph bench sandbox`
makes them, 30 trials, cpu-x86-64-v2. Usage: python huge_files_probe.py REPEATS task:config ..."""

import statistics
import sys
import tempfile
from dataclasses import replace
from pathlib import Path

from kernelgraph.agent.backends.c import CBackend
from kernelgraph.agent.backends.timing import IN_PROCESS, ISOLATED
from kernelgraph.agent.targets import get_target
from kernelgraph.agent.tasks import get_task
from kernelgraph.bench.configs import checked_configs
from kernelgraph.bench.sandbox import BENCH_TIMING, _evaluate_once

ARMS = {"in-process": IN_PROCESS, "isolated": ISOLATED}
base = replace(BENCH_TIMING, min_trials=30, max_trials=30)
target = get_target("cpu-x86-64-v2")
repeats = int(sys.argv[1])
with tempfile.TemporaryDirectory() as tmp:
    backends = {arm: CBackend(cache_dir=Path(tmp), counters=False, timing=replace(base, protocol=protocol))
                for arm, protocol in ARMS.items()}
    cells = [(cell.split(":")[0], cell.split(":")[1]) for cell in sys.argv[2:]]
    runs = {(cell, arm): [] for cell in cells for arm in ARMS}
    for repeat in range(repeats):  # repeat-major: every cell's repeats spread over the whole run
        for name, label in cells:
            task = get_task(name)
            source = task.source("c", checked_configs(task)[label])
            for arm in (list(ARMS) if repeat % 2 == 0 else list(ARMS)[::-1]):
                runs[(name, label), arm].append(_evaluate_once(task, target, source, backends[arm])["median_ns"])
    for cell in cells:
        ratios = [v / r for v, r in zip(runs[cell, "isolated"], runs[cell, "in-process"])]
        print(f"{cell[0]} {cell[1]}: in-process {statistics.median(runs[cell, 'in-process']) / 1e3:8.0f} us"
              f"  isolated {statistics.median(runs[cell, 'isolated']) / 1e3:8.0f} us  paired {statistics.median(ratios):.3f}"
              f"  [{' '.join(f'{x:.3f}' for x in ratios)}]", flush=True)
