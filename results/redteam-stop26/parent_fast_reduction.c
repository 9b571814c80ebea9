/* A fast honest reduction (two threads, 8 double accumulators each): the parent for a05, as a loop's
   current best would be after a few kept steps. */
#include <omp.h>
static double part_sum(const float* restrict x, long lo, long hi) {
    double a[8] = {0};
    long i = lo;
    for (; i + 8 <= hi; i += 8)
        for (int k = 0; k < 8; k++) a[k] += x[i + k];
    double s = 0.0;
    for (; i < hi; i++) s += x[i];
    for (int k = 0; k < 8; k++) s += a[k];
    return s;
}
void kernel(const float* restrict x, float* restrict out, int n) {
    double s = 0.0;
#pragma omp parallel num_threads(2) reduction(+:s)
    {
        int t = omp_get_thread_num(), nt = omp_get_num_threads();
        long lo = (long)n * t / nt, hi = (long)n * (t + 1) / nt;
        s += part_sum(x, lo, hi);
    }
    out[0] = (float)s;
}
