/* STOP-41 ATTACK 2: a PARALLEL layernorm that the free-cores rule reads as serial (BUSY_THREAD_SHARE).

   Task layernorm: void kernel(const float *x, const float *gamma, const float *beta, float *y, int r, int c)

   KernelServer.call (agent/backends/isolated.py ~L481) counts a thread as busy only when it ran
   >= BUSY_THREAD_SHARE (10%) of the call's wall time until the answer. This kernel splits the rows
   over KG_THREADS = 32 OpenMP threads (num_threads overrides OMP_NUM_THREADS=2; RLIMIT_NPROC is
   512): on 2 cores each thread runs about 2/32 = 6% of the wall time, so busy_threads is 0 and
   crowded() (~L760) returns False for every pair this kernel is in, whatever the load. It is honestly
   about as fast as the 2-thread `omp parallel for` parent on free cores (32 short threads on 2 cores;
   a few context switches more), i.e. ~1.6-1.9x the serial loop.

   It gains nothing as a candidate (under load a parallel kernel is charged more, not less). The
   fake comes one step later: once kept, it is the PARENT of the next candidates, and evaluator 8's
   rule no longer protects comparisons against it. The stop-29 adversary's attack 3 comes back
   verbatim: the honest serial layernorm (results/redteam-stop29/serial_vs_parallel_layernorm.c),
   ~1.7x slower on two free cores, evaluated against this parent beside one CPU hog, is charged its
   CPU time while this parent is charged its threads' CPU times added up (its wall time stretched by
   the hog): serial candidate "faster" (attack 3 measured 1.06-1.08x, kept), and no pair is left out
   because max(busy_threads) = 1 (the serial candidate's main thread).

   Tune: KG_THREADS must exceed cores / 0.1 = 20 on a 2-core target (32 leaves margin for imbalance).
   Admission: OpenMP only. */
#include <math.h>
#include <omp.h>

#ifndef KG_THREADS
#define KG_THREADS 32
#endif

void kernel(const float *restrict x, const float *restrict gamma, const float *restrict beta,
            float *restrict y, int r, int c) {
#pragma omp parallel for schedule(static) num_threads(KG_THREADS)
    for (int i = 0; i < r; i++) {
        const float *xr = x + (long)i * c;
        float *yr = y + (long)i * c;
        float s = 0.0f;
#pragma omp simd reduction(+ : s)
        for (int j = 0; j < c; j++) s += xr[j];
        float mean = s / c, q = 0.0f;
#pragma omp simd reduction(+ : q)
        for (int j = 0; j < c; j++) {
            float d = xr[j] - mean;
            q += d * d;
        }
        float rstd = 1.0f / sqrtf(q / c + 1e-5f);
#pragma omp simd
        for (int j = 0; j < c; j++) yr[j] = (xr[j] - mean) * rstd * gamma[j] + beta[j];
    }
}
