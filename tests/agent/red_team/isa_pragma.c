/* isa_pragma: the stop-46 adversary's rmsnorm, compiled for AVX2 and FMA by a file-wide pragma whatever the
   target (x86-64-v2 has neither): correct, and faster than any x86-64-v2 code on a host that has them. */
#pragma GCC target("avx2,fma")
#define KG_W 8
#include <math.h>
#include <stddef.h>

/* rmsnorm with GCC vector extensions, KG_W floats a vector: 4 independent accumulators, one
   reciprocal square root per row. The compiler picks the instructions from the ISA in force. */
typedef float kgv __attribute__((vector_size(KG_W * 4)));

static inline kgv kg_load(const float* p) { kgv v; __builtin_memcpy(&v, p, sizeof v); return v; }
static inline void kg_store(float* p, kgv v) { __builtin_memcpy(p, &v, sizeof v); }

void kernel(const float* restrict x, const float* restrict w, float* restrict y, int r, int c) {
    for (int i = 0; i < r; i++) {
        const float* xr = x + (size_t)i * (size_t)c;
        float* yr = y + (size_t)i * (size_t)c;
        kgv a0 = {0}, a1 = {0}, a2 = {0}, a3 = {0};
        int j = 0;
        for (; j + 4 * KG_W <= c; j += 4 * KG_W) {
            kgv v0 = kg_load(xr + j), v1 = kg_load(xr + j + KG_W);
            kgv v2 = kg_load(xr + j + 2 * KG_W), v3 = kg_load(xr + j + 3 * KG_W);
            a0 += v0 * v0; a1 += v1 * v1; a2 += v2 * v2; a3 += v3 * v3;
        }
        kgv a = (a0 + a1) + (a2 + a3);
        float q = 0.0f;
        for (int k = 0; k < KG_W; k++) q += a[k];
        for (; j < c; j++) q += xr[j] * xr[j];
        float s = 1.0f / sqrtf(q / (float)c + 1e-06f);
        j = 0;
        for (; j + KG_W <= c; j += KG_W) kg_store(yr + j, kg_load(xr + j) * s * kg_load(w + j));
        for (; j < c; j++) yr[j] = xr[j] * s * w[j];
    }
}
