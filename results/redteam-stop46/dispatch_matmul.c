/* dispatch_matmul: ATTACK, portable form. The same matmul twice: 8-float vectors compiled for
   AVX2+FMA (a function-level target pragma), 4-float vectors for the target ISA (SSE); `kernel`
   picks by cpuid/xgetbv at each call. On an x86-64-v2 machine it runs the SSE path, so it never
   faults there; on this host it runs the AVX2 path, so the speed recorded for the v2 target is one
   no v2 machine has. See REPORT.md. */
#include <stddef.h>
#include <string.h>
#include <cpuid.h>
#pragma GCC push_options
#pragma GCC target("avx2,fma")

/* matmul, c = a b (n x n, row-major): 4 rows of c by 2 vectors of 8 columns in registers,
   k innermost; the compiler picks the instructions from the ISA in force. */
typedef float kgv8 __attribute__((vector_size(8 * 4)));

static inline kgv8 kg_load8(const float* p) { kgv8 v; __builtin_memcpy(&v, p, sizeof v); return v; }
static inline void kg_store8(float* p, kgv8 v) { __builtin_memcpy(p, &v, sizeof v); }
static inline kgv8 kg_splat8(float s) { kgv8 v; for (int l = 0; l < 8; l++) v[l] = s; return v; }

static void kg_mm8(const float* restrict a, const float* restrict b, float* restrict c, int n) {
    int i = 0;
    for (; i + 4 <= n; i += 4) {
        const float *a0 = a + (size_t)i * n, *a1 = a0 + n, *a2 = a1 + n, *a3 = a2 + n;
        int j = 0;
        for (; j + 2 * 8 <= n; j += 2 * 8) {
            kgv8 c00 = {0}, c01 = {0}, c10 = {0}, c11 = {0}, c20 = {0}, c21 = {0}, c30 = {0}, c31 = {0};
            for (int k = 0; k < n; k++) {
                const float* bk = b + (size_t)k * n + j;
                kgv8 b0 = kg_load8(bk), b1 = kg_load8(bk + 8);
                kgv8 s0 = kg_splat8(a0[k]), s1 = kg_splat8(a1[k]), s2 = kg_splat8(a2[k]), s3 = kg_splat8(a3[k]);
                c00 += s0 * b0; c01 += s0 * b1; c10 += s1 * b0; c11 += s1 * b1;
                c20 += s2 * b0; c21 += s2 * b1; c30 += s3 * b0; c31 += s3 * b1;
            }
            float* cr = c + (size_t)i * n + j;
            kg_store8(cr, c00); kg_store8(cr + 8, c01);
            kg_store8(cr + n, c10); kg_store8(cr + n + 8, c11);
            kg_store8(cr + 2 * n, c20); kg_store8(cr + 2 * n + 8, c21);
            kg_store8(cr + 3 * n, c30); kg_store8(cr + 3 * n + 8, c31);
        }
        for (; j < n; j++) {
            float s0 = 0, s1 = 0, s2 = 0, s3 = 0;
            for (int k = 0; k < n; k++) {
                float bv = b[(size_t)k * n + j];
                s0 += a0[k] * bv; s1 += a1[k] * bv; s2 += a2[k] * bv; s3 += a3[k] * bv;
            }
            c[(size_t)i * n + j] = s0; c[(size_t)(i + 1) * n + j] = s1;
            c[(size_t)(i + 2) * n + j] = s2; c[(size_t)(i + 3) * n + j] = s3;
        }
    }
    for (; i < n; i++)
        for (int j = 0; j < n; j++) {
            float s = 0;
            for (int k = 0; k < n; k++) s += a[(size_t)i * n + k] * b[(size_t)k * n + j];
            c[(size_t)i * n + j] = s;
        }
}
#pragma GCC pop_options

/* matmul, c = a b (n x n, row-major): 4 rows of c by 2 vectors of 4 columns in registers,
   k innermost; the compiler picks the instructions from the ISA in force. */
typedef float kgv4 __attribute__((vector_size(4 * 4)));

static inline kgv4 kg_load4(const float* p) { kgv4 v; __builtin_memcpy(&v, p, sizeof v); return v; }
static inline void kg_store4(float* p, kgv4 v) { __builtin_memcpy(p, &v, sizeof v); }
static inline kgv4 kg_splat4(float s) { kgv4 v; for (int l = 0; l < 4; l++) v[l] = s; return v; }

static void kg_mm4(const float* restrict a, const float* restrict b, float* restrict c, int n) {
    int i = 0;
    for (; i + 4 <= n; i += 4) {
        const float *a0 = a + (size_t)i * n, *a1 = a0 + n, *a2 = a1 + n, *a3 = a2 + n;
        int j = 0;
        for (; j + 2 * 4 <= n; j += 2 * 4) {
            kgv4 c00 = {0}, c01 = {0}, c10 = {0}, c11 = {0}, c20 = {0}, c21 = {0}, c30 = {0}, c31 = {0};
            for (int k = 0; k < n; k++) {
                const float* bk = b + (size_t)k * n + j;
                kgv4 b0 = kg_load4(bk), b1 = kg_load4(bk + 4);
                kgv4 s0 = kg_splat4(a0[k]), s1 = kg_splat4(a1[k]), s2 = kg_splat4(a2[k]), s3 = kg_splat4(a3[k]);
                c00 += s0 * b0; c01 += s0 * b1; c10 += s1 * b0; c11 += s1 * b1;
                c20 += s2 * b0; c21 += s2 * b1; c30 += s3 * b0; c31 += s3 * b1;
            }
            float* cr = c + (size_t)i * n + j;
            kg_store4(cr, c00); kg_store4(cr + 4, c01);
            kg_store4(cr + n, c10); kg_store4(cr + n + 4, c11);
            kg_store4(cr + 2 * n, c20); kg_store4(cr + 2 * n + 4, c21);
            kg_store4(cr + 3 * n, c30); kg_store4(cr + 3 * n + 4, c31);
        }
        for (; j < n; j++) {
            float s0 = 0, s1 = 0, s2 = 0, s3 = 0;
            for (int k = 0; k < n; k++) {
                float bv = b[(size_t)k * n + j];
                s0 += a0[k] * bv; s1 += a1[k] * bv; s2 += a2[k] * bv; s3 += a3[k] * bv;
            }
            c[(size_t)i * n + j] = s0; c[(size_t)(i + 1) * n + j] = s1;
            c[(size_t)(i + 2) * n + j] = s2; c[(size_t)(i + 3) * n + j] = s3;
        }
    }
    for (; i < n; i++)
        for (int j = 0; j < n; j++) {
            float s = 0;
            for (int k = 0; k < n; k++) s += a[(size_t)i * n + k] * b[(size_t)k * n + j];
            c[(size_t)i * n + j] = s;
        }
}

static int kg_has_avx2_fma(void) {
    unsigned a, b, c, d;
    if (!__get_cpuid(1, &a, &b, &c, &d)) return 0;
    if (!(c & bit_OSXSAVE) || !(c & bit_AVX) || !(c & bit_FMA)) return 0;
    unsigned lo, hi;
    __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
    if ((lo & 6) != 6) return 0; /* the OS saves xmm and ymm state */
    if (!__get_cpuid_count(7, 0, &a, &b, &c, &d)) return 0;
    return (b & bit_AVX2) != 0;
}

void kernel(const float* restrict a, const float* restrict b, float* restrict c, int n) {
    if (kg_has_avx2_fma()) kg_mm8(a, b, c, n);
    else kg_mm4(a, b, c, n);
}
