/* rmsnorm, 8 partial sums (the sandbag ladder's kg_rms). KG_SPIN: percent of its own work spun on top
   (the stand-in for a parent that slows itself as the parent; earlier adversaries' role channels). */
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#ifndef KG_SPIN
#define KG_SPIN 0
#endif
static inline uint64_t kg_tsc(void) { return __builtin_ia32_rdtsc(); }
void kernel(const float* x, const float* w, float* y, int r, int c) {
    uint64_t start = kg_tsc();
    for (int i = 0; i < r; i++) {
        const float* xr = x + (size_t)i * (size_t)c;
        float* yr = y + (size_t)i * (size_t)c;
        float q0 = 0, q1 = 0, q2 = 0, q3 = 0, q4 = 0, q5 = 0, q6 = 0, q7 = 0;
        int j = 0;
        for (; j + 8 <= c; j += 8) {
            q0 += xr[j] * xr[j]; q1 += xr[j + 1] * xr[j + 1]; q2 += xr[j + 2] * xr[j + 2]; q3 += xr[j + 3] * xr[j + 3];
            q4 += xr[j + 4] * xr[j + 4]; q5 += xr[j + 5] * xr[j + 5]; q6 += xr[j + 6] * xr[j + 6]; q7 += xr[j + 7] * xr[j + 7];
        }
        float q = ((q0 + q1) + (q2 + q3)) + ((q4 + q5) + (q6 + q7));
        for (; j < c; j++) q += xr[j] * xr[j];
        float inv = 1.0f / sqrtf(q / c + 1e-6f);
        for (j = 0; j < c; j++) yr[j] = xr[j] * inv * w[j];
    }
    if (KG_SPIN > 0) {
        uint64_t now = kg_tsc();
        uint64_t until = now + (now - start) * (uint64_t)KG_SPIN / 100u;
        while (kg_tsc() < until) __builtin_ia32_pause();
    }
}
