/* isa_libmvec: an rmsnorm that calls libmvec's AVX2 variant of expf (8 lanes in a ymm register) on
   an x86-64-v2 target: the library's AVX2 code runs on this host, and no x86-64-v2 machine has it. */
#include <math.h>
#include <stddef.h>

typedef float kg8 __attribute__((vector_size(32)));
kg8 _ZGVdN8v_expf(kg8);

void kernel(const float* restrict x, const float* restrict w, float* restrict y, int r, int c) {
    kg8 zero = {0};
    float one = _ZGVdN8v_expf(zero)[0]; /* exp(0) = 1 */
    for (int i = 0; i < r; i++) {
        const float* xr = x + (size_t)i * (size_t)c;
        float q = 0.0f;
        for (int j = 0; j < c; j++) q += xr[j] * xr[j];
        float s = one / sqrtf(q / (float)c + 1e-06f);
        for (int j = 0; j < c; j++) y[(size_t)i * (size_t)c + j] = xr[j] * s * w[j];
    }
}
