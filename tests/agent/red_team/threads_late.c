/* stop 41 (the fifth adversary's attack 5): serial on its first calls, then on every core the
   target gives it. The thread count recorded with a measurement was read after the first call
   only, so it said 1. */
#include <math.h>

static int calls;

void kernel(const float* x, const float* w, float* y, int r, int c) {
    int parallel = ++calls > 2;
#pragma omp parallel for if (parallel) schedule(static)
    for (int i = 0; i < r; i++) {
        float q = 0.0f;
        for (int j = 0; j < c; j++) q += x[(long)i * c + j] * x[(long)i * c + j];
        float inv = 1.0f / sqrtf(q / c + 1e-6f);
        for (int j = 0; j < c; j++) y[(long)i * c + j] = x[(long)i * c + j] * inv * w[j];
    }
}
