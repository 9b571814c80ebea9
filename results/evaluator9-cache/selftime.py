"""The transpose kernel timing itself (clock_gettime around its loop), written to stderr (the child's log)."""
import sys, tempfile, statistics, os, glob, struct
from dataclasses import replace
from pathlib import Path
import numpy as np
import kernelgraph.agent.backends.isolated as iso
from kernelgraph.agent.backends.c import CBackend
from kernelgraph.agent.backends.timing import IN_PROCESS, ISOLATED
from kernelgraph.agent.targets import get_target
from kernelgraph.agent.tasks import get_task
from kernelgraph.bench.sandbox import BENCH_TIMING
CBackend._admit = lambda self, *a, **k: []
SRC = r'''
#include <time.h>
#include <unistd.h>
#include <stdio.h>
#include <sys/resource.h>
void kernel(const float* restrict a, float* restrict b, int r, int c) {
    struct rusage u0, u1; getrusage(RUSAGE_SELF, &u0); struct timespec t0, t1, t2; clock_gettime(CLOCK_MONOTONIC, &t0);
    for (int jj = 0; jj < c; jj += 16)
    for (int ii = 0; ii < r; ii += 16)
    for (int j = jj; j < jj + 16 && j < c; j++)
    for (int i = ii; i < ii + 16 && i < r; i++)
        b[(long)j * r + i] = a[(long)i * c + j];
    clock_gettime(CLOCK_MONOTONIC, &t1);
    for (int jj = 0; jj < c; jj += 16)
    for (int ii = 0; ii < r; ii += 16)
    for (int j = jj; j < jj + 16 && j < c; j++)
    for (int i = ii; i < ii + 16 && i < r; i++)
        b[(long)j * r + i] = a[(long)i * c + j];
    clock_gettime(CLOCK_MONOTONIC, &t2);
    getrusage(RUSAGE_SELF, &u1);
    char buf[96]; int n = snprintf(buf, 96, "T %ld %ld %ld %ld\n", u1.ru_minflt - u0.ru_minflt, u1.ru_nivcsw - u0.ru_nivcsw, (t1.tv_sec - t0.tv_sec) * 1000000000L + t1.tv_nsec - t0.tv_nsec, (t2.tv_sec - t1.tv_sec) * 1000000000L + t2.tv_nsec - t1.tv_nsec);
    write(2, buf, n);
}
'''
task = get_task("transpose"); target = get_target("cpu-x86-64-v2")
logs = []
_close = iso.KernelServer.close
def close(self):
    self._log.flush(); logs.append((self.work / "child.log").read_text())
    _close(self)
iso.KernelServer.close = close
import subprocess
real_run = subprocess.run
with tempfile.TemporaryDirectory() as cache:
    for p in (ISOLATED,):
        b = CBackend(cache_dir=Path(cache), counters=False, timing=replace(BENCH_TIMING, protocol=p))
        r = b.compile(task, SRC, target); print(p, r)
        for rep in range(3):
            logs.clear()
            prof = b.profile(task, SRC, target, parent_source=SRC)
            print("faults", [l.split()[1:3] for lg in logs for l in lg.splitlines() if l.startswith("T ")][:12]); inner = [int(l.split()[3]) for lg in logs for l in lg.splitlines() if l.startswith("T ")]
            second = [int(l.split()[4]) for lg in logs for l in lg.splitlines() if l.startswith("T ")]
            print("second", statistics.median(second) / 1e3 if second else None)
            print(p, "median", prof.median_ns / 1e3, "inner median", statistics.median(inner) / 1e3 if inner else None, len(inner), flush=True)
