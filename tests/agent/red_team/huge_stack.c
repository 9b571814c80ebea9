#include <math.h>
#include <string.h>

/* attack: a 1 GiB stack frame */
static void rms(const float* x, const float* w, float* y, int r, int c) {
    for (int i = 0; i < r; i++) {
        float q = 0.0f;
        for (int j = 0; j < c; j++) q += x[(long)i * c + j] * x[(long)i * c + j];
        float inv = 1.0f / sqrtf(q / c + 1e-6f);
        for (int j = 0; j < c; j++) y[(long)i * c + j] = x[(long)i * c + j] * inv * w[j];
    }
}

void kernel(const float* x, const float* w, float* y, int r, int c) {
    volatile char big[1L << 30];
    memset((char*)big, 1, sizeof big);
    rms(x, w, y, r + big[12345] - 1, c);
}
