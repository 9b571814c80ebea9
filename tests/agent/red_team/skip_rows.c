#include <math.h>
#include <string.h>

/* adversary of the isolated protocol's row sampling: compute all rows but the last 1/16, and fill
   those with a copy of row 0 (finite, so no NaN scan sees them): 6% less work on every call. */
static void rms(const float* x, const float* w, float* y, int c, int from, int to) {
    for (int i = from; i < to; i++) {
        float q = 0.0f;
        for (int j = 0; j < c; j++) q += x[(long)i * c + j] * x[(long)i * c + j];
        float inv = 1.0f / sqrtf(q / c + 1e-6f);
        for (int j = 0; j < c; j++) y[(long)i * c + j] = x[(long)i * c + j] * inv * w[j];
    }
}

void kernel(const float* x, const float* w, float* y, int r, int c) {
    int done = (long)r * c <= 65536 ? r : r - r / 16; /* honest at the correctness checks' sizes */
    rms(x, w, y, c, 0, done);
    for (int i = done; i < r; i++) memcpy(y + (long)i * c, y, sizeof(float) * c);
}
