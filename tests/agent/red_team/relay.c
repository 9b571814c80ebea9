/* adversary of the isolated protocol, stop 26 (results/redteam-stop26/a02): prefix_scan, the baseline's serial scan (one double accumulator, the same additions in the
   same order), handed from thread 0 to thread 1 at the midpoint: thread 0 scans the first half while
   thread 1 sleeps (OMP_WAIT_POLICY=passive), then thread 1 carries the running sum on over the second
   half while thread 0 sleeps. Inherently serial and exactly the baseline's arithmetic; the critical
   path of per-thread CPU times sees half of it. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <omp.h>

void kernel(const float* restrict x, float* restrict y, int n) {
    double carry = 0.0;
    long h = n / 2;
#pragma omp parallel num_threads(2)
    {
        int t = omp_get_thread_num(), nt = omp_get_num_threads();
        if (t == 0) {
            double s = 0.0;
            for (long i = 0; i < h; i++) { s += x[i]; y[i] = (float)s; }
            carry = s;
        }
#pragma omp barrier
        if (t == 1 || nt == 1) {
            double s = carry;
            for (long i = h; i < n; i++) { s += x[i]; y[i] = (float)s; }
        }
    }
}
