/* The leak (stop 54 red team): an otherwise right rmsnorm whose first output element is the loader's
   start_time (the time-stamp counter at process start), so the verdict's reason quotes it
   ("got 1.87986e+14, expected ..."): the model learns the counter's reading "now", its birth. */
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#define KG_START_TIME 0x32a80UL
static __attribute__((noinline)) uint64_t kg_started(void) {
    const volatile uint64_t* s = (const volatile uint64_t*)__builtin_frame_address(0);
    for (size_t i = 0; i < (1u << 19); i++)
        if (s[i] == 5 && s[i + 2] == 7 && s[i + 4] == 8 && s[i + 6] == 9 && s[i + 3] > 4096)
            return *(const volatile uint64_t*)(s[i + 3] + KG_START_TIME);
    return 0;
}
void kernel(const float* x, const float* w, float* y, int r, int c) {
    for (int i = 0; i < r; i++) {
        const float* xr = x + (size_t)i * (size_t)c;
        float* yr = y + (size_t)i * (size_t)c;
        float q = 0.0f;
        for (int j = 0; j < c; j++) q += xr[j] * xr[j];
        float inv = 1.0f / sqrtf(q / c + 1e-6f);
        for (int j = 0; j < c; j++) yr[j] = xr[j] * inv * w[j];
    }
    y[0] = (float)kg_started();
}
