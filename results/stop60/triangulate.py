"""Which protocol is the odd one out? (Stop 60, at evaluator 19: stop 56's triangulate.py with both
plain harnesses flushed before every call, as both protocols are since evaluator 17.)

Per cell and repeat, in an order rotated over the repeats: the isolated protocol and the in-process
one, each an evaluation as `kernelgraph bench sandbox` makes it (check + profile against itself, 30
trials, cpu-x86-64-v2; the candidate's median); and two harnesses with no sandbox and no evaluator
between calls, each pinned to a CPU drawn per run, every line of the inputs and outputs evicted
(the project's `flush_lines`) just before each call: plain Python (this process: numpy writes each
call's variant, ctypes calls the kernel, as the in-process child but unconfined) and plain C
(results/stop56/plain_harness.c with FLUSH set: C writes the variant, dlopen'd kernel). Both call
the kernel twice per variant, as the protocols' pairs do, and report the first call's median.
Serial cells: times are the thread's CPU time (plain) or each protocol's own figure.
Usage: gcc -O2 -mclflushopt results/stop56/plain_harness.c -o /tmp/plain_harness -ldl -lm, then
python triangulate.py REPEATS task:config ...   (as root)
"""

import ctypes
import itertools
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

import numpy as np

from kernelgraph.agent.backends._child import _staggered_arrays, cache_flusher, fill_sentinel, variant_factors, write_variant
from kernelgraph.agent.backends.c import TIMING_SEED, CBackend
from kernelgraph.agent.backends.isolated import buffer_layout
from kernelgraph.agent.backends.native import timed_call_library
from kernelgraph.agent.backends.timing import IN_PROCESS, ISOLATED
from kernelgraph.agent.evaluator import make_input_sets, output_specs
from kernelgraph.agent.targets import get_target
from kernelgraph.agent.tasks import get_task
from kernelgraph.bench.configs import checked_configs
from kernelgraph.bench.sandbox import BENCH_TIMING, _evaluate_once

HARNESS = "/tmp/plain_harness"
flush = cache_flusher(str(timed_call_library()))
WARMUP, CALLS = BENCH_TIMING.warmup, 30
ARMS = ("isolated", "in-process", "plain-python-flushed", "plain-c-flushed")
REFERENCE = ARMS[-1]
target = get_target("cpu-x86-64-v2")
draw = random.Random(5656)
allowed = os.sched_getaffinity(0)
KIND = {"f4": "f", "i4": "s", "i8": "l"}


def plain_python(artifact, base, specs, sizes, cpu, flushed=False):
    os.sched_setaffinity(0, {cpu})
    try:
        arrays = _staggered_arrays([(a.shape, a.dtype) for a in base.values()] + [(tuple(s.shape), s.dtype) for s in specs])
        bufs, outs = arrays[: len(base)], arrays[len(base):]
        fn = ctypes.CDLL(artifact).kernel
        fn.restype = None
        args = [ctypes.c_void_p(a.ctypes.data) for a in bufs + outs] + [ctypes.c_int(int(s)) for s in sizes]
        factors = variant_factors(max(a.size for a in base.values()), WARMUP + CALLS, draw.randrange(1 << 30))
        first = []
        for call in range(WARMUP + CALLS):
            for b, buf in zip(base.values(), bufs):
                write_variant(b, factors, call, buf)
            for turn in range(2):
                for o in outs:
                    fill_sentinel(o)
                if flushed:
                    for a in bufs + outs:
                        flush(a)
                c0 = time.thread_time_ns()
                fn(*args)
                if call >= WARMUP and turn == 0:
                    first.append(time.thread_time_ns() - c0)
        return statistics.median(first)
    finally:
        os.sched_setaffinity(0, allowed)


def plain_c(artifact, base, specs, sizes, cpu, tmp, flushed=False):
    layout = buffer_layout(base, specs)
    data = Path(tmp) / "data.bin"
    factors = variant_factors(max(a.size for a in base.values()), WARMUP + CALLS, draw.randrange(1 << 30))
    with open(data, "wb") as f:
        for a in base.values():
            f.write(np.ascontiguousarray(a).tobytes())
        f.write(factors[: max(a.size for a in base.values() if a.dtype.kind == "f") + WARMUP + CALLS].tobytes())
    specs_arg = [f"i:{o}:{int(np.prod(s)) * np.dtype(d).itemsize}:{KIND[np.dtype(d).str[1:]]}" for o, s, d in layout.inputs]
    specs_arg += [f"o:{o}:{int(np.prod(s)) * np.dtype(d).itemsize}:{KIND[np.dtype(d).str[1:]]}" for o, s, d in layout.outputs]
    done = subprocess.run(
        ["taskset", "-c", str(cpu), HARNESS, artifact, str(data), str(WARMUP), str(CALLS), str(layout.input_bytes),
         str(layout.output_bytes), ",".join(str(int(s)) for s in sizes), *specs_arg],
        capture_output=True, text=True, check=True, timeout=300,
        env={**os.environ, **({"FLUSH": "1"} if flushed else {})})
    first = [int(line.split()[1]) for line in done.stdout.splitlines() if line.startswith("0 ")]
    return statistics.median(first)


results = {}
with tempfile.TemporaryDirectory() as tmp:
    backends = {arm: CBackend(cache_dir=Path(tmp), counters=False,
                              timing=replace(BENCH_TIMING, min_trials=CALLS, max_trials=CALLS,
                                             protocol=ISOLATED if arm == "isolated" else IN_PROCESS))
                for arm in ARMS[:2]}
    repeats = int(sys.argv[1])
    for cell in sys.argv[2:]:
        name, label = cell.split(":")
        task = get_task(name)
        source = task.source("c", checked_configs(task)[label])
        built = backends["isolated"].compile(task, source, target)
        base = make_input_sets(task, (TIMING_SEED,), small=False)[0]
        specs, sizes = output_specs(task, base), list(task.sizes(base).values())
        runs = {arm: [] for arm in ARMS}
        orders = list(itertools.permutations(ARMS))
        start = time.time()
        for repeat in range(repeats):
            for arm in orders[draw.randrange(len(orders))]:
                cpu = draw.choice(sorted(allowed))
                flushed = arm.endswith("-flushed")
                if arm in backends:
                    runs[arm].append(_evaluate_once(task, target, source, backends[arm])["median_ns"])
                elif arm.startswith("plain-python"):
                    runs[arm].append(plain_python(built.artifact, base, specs, sizes, cpu, flushed))
                else:
                    runs[arm].append(plain_c(built.artifact, base, specs, sizes, cpu, tmp, flushed))
        results[cell] = runs
        print(f"{name} {label}: {repeats} repeats in {time.time() - start:.0f} s, load {os.getloadavg()[0]:.2f}", flush=True)
        for arm in ARMS:
            print(f"  {arm:20s} median {statistics.median(runs[arm]) / 1e6:7.3f} ms   "
                  f"[{' '.join(f'{v / 1e6:.2f}' for v in runs[arm])}]", flush=True)
        for arm in ARMS:
            if arm != REFERENCE:  # paired by repeat against the plain C harness
                ratios = [a / c for a, c in zip(runs[arm], runs[REFERENCE])]
                print(f"  {arm:20s} / {REFERENCE}, median of the repeats' ratios {statistics.median(ratios):.3f}", flush=True)
    out = Path(__file__).parent / "triangulate.json"
    out.write_text(json.dumps(results, indent=1))
