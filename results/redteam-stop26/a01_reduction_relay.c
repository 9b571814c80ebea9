/* A01: reduction, the baseline's serial loop, run in relay by two OpenMP threads: thread 0 sums the
   first half, then (barrier; OMP_WAIT_POLICY=passive, so the waiter sleeps in a futex) thread 1 sums
   the second half while thread 0 sleeps. The work is serial: one core busy at a time, wall time that
   of the serial loop. The isolated timer takes a call's time as the critical path of the per-thread
   CPU times: max(busiest thread, all threads / cores) = about half the work, plus the hand-over's
   overhead, which is then subtracted (call_overhead_ns). Expected: ~2x "speedup" for no real one. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <omp.h>

void kernel(const float* restrict x, float* restrict out, int n) {
    double s0 = 0.0, s1 = 0.0;
    long h = n / 2;
#pragma omp parallel num_threads(2)
    {
        int t = omp_get_thread_num(), nt = omp_get_num_threads();
        if (t == 0) {
            double s = 0.0;
            for (long i = 0; i < h; i++) s += x[i];
            s0 = s;
        }
#pragma omp barrier
        if (t == 1 || nt == 1) {
            double s = 0.0;
            for (long i = h; i < n; i++) s += x[i];
            s1 = s;
        }
    }
    out[0] = (float)(s0 + s1);
}
