#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <omp.h>

/* reduction {'acc': 1, 'unroll': 1, 'simd': False, 'parallel': False, 'schedule': 'static'} */
void kernel(const float* restrict x, float* restrict out, int n) {
    double s = 0.0;
    for (long i = 0; i < n; i++) s += x[i];
    out[0] = (float)s;
}
