/* Control for the wall-clock harness: the baseline's loop, truly split over two threads at once. */
#include <omp.h>
void kernel(const float* restrict x, float* restrict out, int n) {
    double s = 0.0;
#pragma omp parallel for num_threads(2) reduction(+:s) schedule(static)
    for (long i = 0; i < n; i++) s += x[i];
    out[0] = (float)s;
}
