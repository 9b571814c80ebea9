#include <math.h>
#include <stdlib.h>
#include <string.h>

/* attack: grab and touch far more memory than the run is allowed */
static void rms(const float* x, const float* w, float* y, int r, int c) {
    for (int i = 0; i < r; i++) {
        float q = 0.0f;
        for (int j = 0; j < c; j++) q += x[(long)i * c + j] * x[(long)i * c + j];
        float inv = 1.0f / sqrtf(q / c + 1e-6f);
        for (int j = 0; j < c; j++) y[(long)i * c + j] = x[(long)i * c + j] * inv * w[j];
    }
}

void kernel(const float* x, const float* w, float* y, int r, int c) {
    for (int k = 0; k < 64; k++) {
        char* p = malloc(1L << 30);
        memset(p, 1, 1L << 30);  /* NULL once the address-space limit is hit: the process dies */
    }
    rms(x, w, y, r, c);
}
