"""Stop 61: which part of matmul best-A reads slower isolated? Its source and variants of it, each
timed in both protocols, repeat-major, paired per repeat (isolated over in-process), at evaluator 20.
Variants: as-is; `stack`: the transposed copy of b a stack array (VLA) instead of malloc'd; `twice`:
the body run twice per call; `private-c`: c computed in a malloc'd buffer, copied out once;
`private-all`: a, b and c all malloc'd copies; `heap-twice` (not run): a second malloc'd copy's worth
of heap taken and freed each call. Outputs: variant_probe*.out (variant_probe_haswell.out with
OPENBLAS_CORETYPE=Haswell, variant_probe_default.out without it).
Usage: python variant_probe.py REPEATS VARIANT ..."""

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
from kernelgraph.bench.sandbox import BENCH_TIMING

MALLOC = "float* bt = (float*)malloc(sizeof(float) * (size_t)n * n);"
task = get_task("matmul")
src = task.source("c", checked_configs(task)["best-A"])
assert MALLOC in src
VARIANTS = {
    "as-is": src,
    "stack": src.replace(MALLOC, "float bt[(size_t)n * n];").replace("free(bt);", ""),
    # the whole body twice per call (the second pass recomputes c): does the excess scale with the call?
    "twice": src.replace("void kernel(", "static void body(", 1) + "\nvoid kernel(const float* restrict a, const float* restrict b, float* restrict c, int n) { body(a, b, c, n); body(a, b, c, n); }\n",
    # c computed in a malloc'd buffer and copied out once: is writing the output's mapping the cost?
    "private-c": src.replace("void kernel(", "static void body(", 1) + "\nvoid kernel(const float* restrict a, const float* restrict b, float* restrict c, int n) { float* t = (float*)malloc(sizeof(float) * (size_t)n * n); body(a, b, t, n); memcpy(c, t, sizeof(float) * (size_t)n * n); free(t); }\n",
    # every array the body touches a malloc'd copy: is it the memory at all, or the process?
    "private-all": src.replace("void kernel(", "static void body(", 1) + "\nvoid kernel(const float* restrict a, const float* restrict b, float* restrict c, int n) { size_t m = sizeof(float) * (size_t)n * n; float* t = (float*)malloc(3 * m); memcpy(t, a, m); memcpy(t + (size_t)n * n, b, m); body(t, t + (size_t)n * n, t + 2 * (size_t)n * n, n); memcpy(c, t + 2 * (size_t)n * n, m); free(t); }\n",
    "heap-twice": src.replace(MALLOC, MALLOC + " float* extra = (float*)malloc(sizeof(float) * (size_t)n * n); extra[0] = 0; free(extra);"),
}
ARMS = {"in-process": IN_PROCESS, "isolated": ISOLATED}
base = replace(BENCH_TIMING, min_trials=30, max_trials=30)
target = get_target("cpu-x86-64-v2")
repeats, chosen = int(sys.argv[1]), sys.argv[2:]
with tempfile.TemporaryDirectory() as tmp:
    backends = {arm: CBackend(cache_dir=Path(tmp), counters=False, timing=replace(base, protocol=p)) for arm, p in ARMS.items()}
    runs = {(v, arm): [] for v in chosen for arm in ARMS}
    for repeat in range(repeats):
        for v in chosen:
            for arm in (list(ARMS) if repeat % 2 == 0 else list(ARMS)[::-1]):
                prof = backends[arm].profile(task, VARIANTS[v], target, parent_source=VARIANTS[v])
                runs[v, arm].append(prof.median_ns if prof.judged else float("nan"))
    for v in chosen:
        ratios = [i / r for i, r in zip(runs[v, "isolated"], runs[v, "in-process"])]
        print(f"{v:12s} in-process {statistics.median(runs[v, 'in-process']) / 1e3:7.0f} us  isolated "
              f"{statistics.median(runs[v, 'isolated']) / 1e3:7.0f} us  paired {statistics.median(ratios):.3f}"
              f"  [{' '.join(f'{x:.3f}' for x in ratios)}]", flush=True)
