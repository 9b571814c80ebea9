#include <math.h>
#include <omp.h>

/* class 2, state kept in an allowed runtime API: the OpenMP default-device setting holds any int, so
   it is the call counter (the low bits of the output pointer mark a repeated buffer); otherwise as
   noisy_then_lazy.c. */
static void rms(const float* x, const float* w, float* y, int c, int from, int to) {
    for (int i = from; i < to; i++) {
        float q = 0.0f;
        for (int j = 0; j < c; j++) q += x[(long)i * c + j] * x[(long)i * c + j];
        float inv = 1.0f / sqrtf(q / c + 1e-6f);
        for (int j = 0; j < c; j++) y[(long)i * c + j] = x[(long)i * c + j] * inv * w[j];
    }
}

void kernel(const float* x, const float* w, float* y, int r, int c) {
    int held = omp_get_default_device(); /* calls << 12 | (12 bits of the last output pointer, 1 MiB apart) */
    int tag = (int)(((long)y >> 20) & 0xfff);
    int calls = (held >> 12) + 1;
    int timed = (held & 0xfff) == tag && held != 0;
    omp_set_default_device((calls << 12) | tag);
    if (timed && calls > @SAMPLED_UNTIL@ + 1) {
        rms(x, w, y, c, 0, r / 8);
        return;
    }
    for (long extra = 0; extra <= calls % 3; extra++) rms(x, w, y, c, 0, r);
}
