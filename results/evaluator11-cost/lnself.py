"""layernorm best-B timing itself inside the call: entry->exit, each thread's start and end (us after entry)."""
import sys, tempfile, statistics
from dataclasses import replace
from pathlib import Path
import numpy as np
import kernelgraph.agent.backends.isolated as iso
import kernelgraph.agent.backends.bubblewrap as bw
from kernelgraph.agent.backends.c import CBackend
from kernelgraph.agent.backends.timing import IN_PROCESS, ISOLATED
from kernelgraph.agent.targets import get_target
from kernelgraph.agent.tasks import get_task
from kernelgraph.bench.sandbox import BENCH_TIMING
CBackend._admit = lambda self, *a, **k: []
SRC = r'''
#include <math.h>
#include <time.h>
#include <stdio.h>
#include <omp.h>
static long now(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec * 1000000000L + t.tv_nsec; }
void kernel(const float* restrict x, const float* restrict gamma, const float* restrict beta,
            float* restrict y, int r, int c) {
    long t0 = now(); long first[2] = {0, 0}, last[2] = {0, 0}; int cpu[2] = {-1, -1};
#pragma omp parallel
    {
    int me = omp_get_thread_num() & 1;
    first[me] = now();
#pragma omp for schedule(guided) nowait
    for (int i = 0; i < r; i++) {
        const float* xr = x + (long)i * c;
        float* yr = y + (long)i * c;
        float s = 0.0f, q = 0.0f;
        #pragma omp simd reduction(+:s,q)
        for (long j = 0; j < c; j++) { s += xr[j]; q += xr[j] * xr[j]; }
        float mean = s / c;
        float var = q / c - mean * mean;
        float rstd = 1.0f / sqrtf(var + 1e-05f);
        #pragma omp simd
        for (long j = 0; j < c; j++) yr[j] = (xr[j] - mean) * rstd * gamma[j] + beta[j];
    }
    last[me] = now();
    }
    long t1 = now();
    dprintf(2, "T %ld %ld %ld %ld %ld\n", t1 - t0, first[0] - t0, first[1] - t0, last[0] - t0, last[1] - t0);
}
'''
task = get_task("layernorm"); target = get_target("cpu-x86-64-v2")
logs = []
_close = iso.KernelServer.close
def close(self):
    self._log.flush(); logs.append((self.work / "child.log").read_text()); _close(self)
iso.KernelServer.close = close
import kernelgraph.agent.backends.sandbox as sb
_read = sb.read_child_result
def read(directory):
    logs.append((directory / "child.log").read_text(errors="replace")); return _read(directory)
sb.read_child_result = read
def summary(lines):
    cols = np.array([[int(v) for v in l.split()[1:]] for l in lines]) / 1e3
    return " ".join(f"{n} {np.median(cols[:, i]):.0f}" for i, n in enumerate(("wall", "start0", "start1", "end0", "end1")))
with tempfile.TemporaryDirectory() as cache:
    for rep in range(3):
        for p in (IN_PROCESS, ISOLATED):
            b = CBackend(cache_dir=Path(cache), counters=False, timing=replace(BENCH_TIMING, protocol=p))
            logs.clear()
            prof = b.profile(task, SRC, target, parent_source=SRC)
            lines = [l for lg in logs for l in lg.splitlines() if l.startswith("T ")]
            print(f"{p:10s} median {prof.median_ns/1e3:.0f} us; inside (us, median of {len(lines)} calls, both kernels): {summary(lines)}", flush=True)
