/* ATTACK 3 (candidate): a SERIAL layernorm (x: r x c = 2048 x 1024, gamma, beta: c; y: r x c; sizes
   r, c) proposed against a PARALLEL parent (serial_vs_parallel_layernorm_parent.c: the same code
   under `#pragma omp parallel for`, ~1.7-1.9x faster than this one on an idle 2-core host).

   Honest code, dishonest comparison: the two kernels are timed by different clocks
   (agent/backends/isolated.py KernelServer.call: `self.wall_bound = answered <= until_answer`;
   `return min(answered, until_answer) + after_answer`) and lose different overheads
   (CallOverhead.off: a serial call loses the MEDIAN of the serial stand-in's CPU samples, a parallel
   call the LEAST of the parallel stand-in's wall samples, call_overhead).  This candidate is charged
   its CPU time: no preemption, no hand-over latency, no wait for a core.  The parent is charged its
   wall time until the answer (capped by its threads' CPU sum): every wait of either thread for a
   core, the thaw and wake-up latencies above the calibration's luckiest sample, the OpenMP fork and
   join.  docs/sandbox.md measures the parent side alone: layernorm's parallel best-B charged
   x1.26 [1.08, 1.42] more than its in-process wall time at load 1.0-1.5.  Under sustained load
   (another runnable thread on the 2 cores, as on the shared host: load 5-12) the parent's wall time
   rises to its CPU sum, and the cap makes the two clocks meet: a serial kernel that spends less CPU
   than the parallel one's two threads together (no fork/join, no futex wake-ups) is kept as faster.
   What the graph then records: a "speedup" for a kernel 1.7-1.9x slower on an idle machine, which
   the next candidates are compared against. */
#include <math.h>

void kernel(const float *restrict x, const float *restrict gamma, const float *restrict beta,
            float *restrict y, int r, int c) {
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
