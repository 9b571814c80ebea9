#include <math.h>

/* class 2, state admission cannot see: the call counter and the last output pointer live in weak
   symbols (nm type V), which no writable-data rule of today's admission lists; otherwise as
   noisy_then_lazy.c. */
static void rms(const float* x, const float* w, float* y, int c, int from, int to) {
    for (int i = from; i < to; i++) {
        float q = 0.0f;
        for (int j = 0; j < c; j++) q += x[(long)i * c + j] * x[(long)i * c + j];
        float inv = 1.0f / sqrtf(q / c + 1e-6f);
        for (int j = 0; j < c; j++) y[(long)i * c + j] = x[(long)i * c + j] * inv * w[j];
    }
}

__attribute__((weak)) long kg_calls;
__attribute__((weak)) float* kg_last;

void kernel(const float* x, const float* w, float* y, int r, int c) {
    int timed = y == kg_last;
    kg_last = y;
    kg_calls++;
    if (timed && kg_calls > @SAMPLED_UNTIL@ + 1) {
        rms(x, w, y, c, 0, r / 8);
        return;
    }
    for (long extra = 0; extra <= kg_calls % 3; extra++) rms(x, w, y, c, 0, r);
}
