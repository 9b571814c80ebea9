"""Stop 62: is matmul best-A's isolated excess bubblewrap's? results/stop56/plain_harness.c (FLUSH set,
pinned to a CPU drawn per run) run plainly and run through `Sandbox().popen` exactly as the isolated
protocol's child is started (bwrap's namespaces, setpriv's uid switch, its step seccomp filter, the
rlimits, the fixed layout), beside the two protocols' evaluations (30 trials); arm order rotated per
repeat; ratios paired by repeat over the plain harness. Output: sandboxed_plain_probe.out.
Usage: gcc -O2 -mclflushopt results/stop56/plain_harness.c -o /tmp/plain_harness -ldl -lm, then
python sandboxed_plain_probe.py REPEATS task:config ...   (as root)"""

import os
import random
import statistics
import subprocess
import sys
import tempfile
from dataclasses import replace
from pathlib import Path

import numpy as np

from kernelgraph.agent.backends._child import variant_factors
from kernelgraph.agent.backends.bubblewrap import Mount, Rlimits, Sandbox
from kernelgraph.agent.backends.c import TIMING_SEED, CBackend
from kernelgraph.agent.backends.isolated import buffer_layout
from kernelgraph.agent.backends.timing import IN_PROCESS, ISOLATED
from kernelgraph.agent.evaluator import make_input_sets, output_specs
from kernelgraph.agent.targets import get_target
from kernelgraph.agent.tasks import get_task
from kernelgraph.bench.configs import checked_configs
from kernelgraph.bench.sandbox import BENCH_TIMING, _evaluate_once

HARNESS = "/tmp/plain_harness"
WARMUP, CALLS = BENCH_TIMING.warmup, 30
ARMS = ("isolated", "in-process", "plain-c", "plain-c-sandboxed")
REFERENCE = "plain-c"
KIND = {"f4": "f", "i4": "s", "i8": "l"}
target = get_target("cpu-x86-64-v2")
draw = random.Random(6262)
allowed = sorted(os.sched_getaffinity(0))


def plain_c(artifact, base, specs, sizes, cpu, tmp, sandboxed):
    layout = buffer_layout(base, specs)
    data = Path(tmp) / "data" / "data.bin"
    data.parent.mkdir(exist_ok=True)
    data.parent.chmod(0o755)
    factors = variant_factors(max(a.size for a in base.values()), WARMUP + CALLS, draw.randrange(1 << 30))
    with open(data, "wb") as f:
        for a in base.values():
            f.write(np.ascontiguousarray(a).tobytes())
        f.write(factors[: max(a.size for a in base.values() if a.dtype.kind == "f") + WARMUP + CALLS].tobytes())
    data.chmod(0o644)
    specs_arg = [f"i:{o}:{int(np.prod(s)) * np.dtype(d).itemsize}:{KIND[np.dtype(d).str[1:]]}" for o, s, d in layout.inputs]
    specs_arg += [f"o:{o}:{int(np.prod(s)) * np.dtype(d).itemsize}:{KIND[np.dtype(d).str[1:]]}" for o, s, d in layout.outputs]
    argv = ["/usr/bin/taskset", "-c", str(cpu), HARNESS, artifact, str(data), str(WARMUP), str(CALLS),
            str(layout.input_bytes), str(layout.output_bytes), ",".join(str(int(s)) for s in sizes), *specs_arg]
    if sandboxed:
        proc = Sandbox().popen(argv, mounts=[Mount(data.parent), Mount(Path(artifact)), Mount(Path(HARNESS))],
                               env={"FLUSH": "1"}, cwd=Path("/tmp"), limits=Rlimits(), fixed_layout=True)
        out, err = proc.communicate(timeout=300)
        assert proc.returncode == 0, err
        text = out.decode()
    else:
        text = subprocess.run(argv, capture_output=True, text=True, check=True, timeout=300,
                              env={**os.environ, "FLUSH": "1"}).stdout
    return statistics.median(int(line.split()[1]) for line in text.splitlines() if line.startswith("0 "))


with tempfile.TemporaryDirectory() as tmp:
    Path(tmp).chmod(0o755)
    backends = {arm: CBackend(cache_dir=Path(tmp) / "cache", counters=False,
                              timing=replace(BENCH_TIMING, min_trials=CALLS, max_trials=CALLS, protocol=p))
                for arm, p in (("isolated", ISOLATED), ("in-process", IN_PROCESS))}
    repeats = int(sys.argv[1])
    for cell in sys.argv[2:]:
        name, label = cell.split(":")
        task = get_task(name)
        source = task.source("c", checked_configs(task)[label])
        built = backends["isolated"].compile(task, source, target)
        base = make_input_sets(task, (TIMING_SEED,), small=False)[0]
        specs, sizes = output_specs(task, base), list(task.sizes(base).values())
        runs = {arm: [] for arm in ARMS}
        for repeat in range(repeats):
            order = list(ARMS)[repeat % len(ARMS):] + list(ARMS)[: repeat % len(ARMS)]
            for arm in order:
                if arm in backends:
                    runs[arm].append(_evaluate_once(task, target, source, backends[arm])["median_ns"])
                else:
                    runs[arm].append(plain_c(built.artifact, base, specs, sizes, draw.choice(allowed), tmp,
                                             arm.endswith("sandboxed")))
        print(f"{cell}: {repeats} repeats, load {os.getloadavg()[0]:.2f}", flush=True)
        for arm in ARMS:
            ratios = [a / c for a, c in zip(runs[arm], runs[REFERENCE])]
            print(f"  {arm:18s} median {statistics.median(runs[arm]) / 1e6:7.3f} ms  over {REFERENCE} "
                  f"{statistics.median(ratios):.3f}  [{' '.join(f'{r:.3f}' for r in ratios)}]", flush=True)
