/* ATTACK 3 (parent): serial_vs_parallel_layernorm.c with its row loop under OpenMP (2 threads). */
#include <math.h>

void kernel(const float *restrict x, const float *restrict gamma, const float *restrict beta,
            float *restrict y, int r, int c) {
#pragma omp parallel for schedule(static)
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
