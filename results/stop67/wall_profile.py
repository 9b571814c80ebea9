"""Where an isolated evaluation's wall time goes: cProfile over `_evaluate_once` of one cell, both
protocols, after one warm-up evaluation each. Usage: python wall_profile.py TASK LABEL [N]"""

import cProfile
import pstats
import sys
from dataclasses import replace

sys.path.insert(0, ".")
from kernelgraph.agent.backends.c import CBackend  # noqa: E402
from kernelgraph.agent.backends.timing import IN_PROCESS, ISOLATED  # noqa: E402
from kernelgraph.agent.targets import get_target  # noqa: E402
from kernelgraph.bench.sandbox import BENCH_TIMING, _cells, _evaluate_once  # noqa: E402

task_name, label = sys.argv[1], sys.argv[2]
n = int(sys.argv[3]) if len(sys.argv) > 3 else 4
(task, _, source), = [c for c in _cells([task_name]) if c[1] == label]
target = get_target("cpu-x86-64-v2")
timing = replace(BENCH_TIMING, min_trials=30, max_trials=30)
for protocol in (ISOLATED, IN_PROCESS):
    backend = CBackend(counters=False, timing=replace(timing, protocol=protocol))
    _evaluate_once(task, target, source, backend)
    prof = cProfile.Profile()
    walls = []
    prof.enable()
    for _ in range(n):
        walls.append(_evaluate_once(task, target, source, backend)["wall_s"])
    prof.disable()
    print(f"== {protocol} walls", [round(w, 3) for w in walls])
    pstats.Stats(prof).sort_stats("cumulative").print_stats(45)
