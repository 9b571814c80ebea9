/* isa_control_matmul: isa_avx2_matmul.c without the pragma, with 4-float vectors: the best this code does on x86-64-v2. */
#define KG_W 4
#include <stddef.h>
#include <string.h>

/* matmul, c = a b (n x n, row-major): 4 rows of c by 2 vectors of KG_W columns in registers,
   k innermost; the compiler picks the instructions from the ISA in force. */
typedef float kgv __attribute__((vector_size(KG_W * 4)));

static inline kgv kg_load(const float* p) { kgv v; __builtin_memcpy(&v, p, sizeof v); return v; }
static inline void kg_store(float* p, kgv v) { __builtin_memcpy(p, &v, sizeof v); }
static inline kgv kg_splat(float s) { kgv v; for (int l = 0; l < KG_W; l++) v[l] = s; return v; }

void kernel(const float* restrict a, const float* restrict b, float* restrict c, int n) {
    int i = 0;
    for (; i + 4 <= n; i += 4) {
        const float *a0 = a + (size_t)i * n, *a1 = a0 + n, *a2 = a1 + n, *a3 = a2 + n;
        int j = 0;
        for (; j + 2 * KG_W <= n; j += 2 * KG_W) {
            kgv c00 = {0}, c01 = {0}, c10 = {0}, c11 = {0}, c20 = {0}, c21 = {0}, c30 = {0}, c31 = {0};
            for (int k = 0; k < n; k++) {
                const float* bk = b + (size_t)k * n + j;
                kgv b0 = kg_load(bk), b1 = kg_load(bk + KG_W);
                kgv s0 = kg_splat(a0[k]), s1 = kg_splat(a1[k]), s2 = kg_splat(a2[k]), s3 = kg_splat(a3[k]);
                c00 += s0 * b0; c01 += s0 * b1; c10 += s1 * b0; c11 += s1 * b1;
                c20 += s2 * b0; c21 += s2 * b1; c30 += s3 * b0; c31 += s3 * b1;
            }
            float* cr = c + (size_t)i * n + j;
            kg_store(cr, c00); kg_store(cr + KG_W, c01);
            kg_store(cr + n, c10); kg_store(cr + n + KG_W, c11);
            kg_store(cr + 2 * n, c20); kg_store(cr + 2 * n + KG_W, c21);
            kg_store(cr + 3 * n, c30); kg_store(cr + 3 * n + KG_W, c31);
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
