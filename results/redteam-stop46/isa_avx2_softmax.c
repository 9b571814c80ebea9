/* isa_avx2_softmax: ATTACK: AVX2 libmvec expf (_ZGVdN8v_expf) and AVX2 code on any target. See REPORT.md. */
#pragma GCC target("avx2,fma")
#define KG_W 8
#define KG_EXP _ZGVdN8v_expf
#include <stddef.h>

/* softmax by rows with libmvec's vector expf (KG_EXP, KG_W lanes; admission allows every _ZGV*
   variant), one reciprocal per row. The ISA in force picks the registers. */
typedef float kgv __attribute__((vector_size(KG_W * 4)));
kgv KG_EXP(kgv);

static inline kgv kg_load(const float* p) { kgv v; __builtin_memcpy(&v, p, sizeof v); return v; }
static inline void kg_store(float* p, kgv v) { __builtin_memcpy(p, &v, sizeof v); }
static inline kgv kg_splat(float s) { kgv v; for (int l = 0; l < KG_W; l++) v[l] = s; return v; }
static inline kgv kg_max(kgv a, kgv b) { kgv r; for (int l = 0; l < KG_W; l++) r[l] = a[l] > b[l] ? a[l] : b[l]; return r; }

void kernel(const float* restrict x, float* restrict y, int r, int c) {
    for (int i = 0; i < r; i++) {
        const float* xr = x + (size_t)i * (size_t)c;
        float* yr = y + (size_t)i * (size_t)c;
        int j = 0;
        float m = xr[0];
        if (c >= KG_W) {
            kgv mv = kg_load(xr);
            for (j = KG_W; j + KG_W <= c; j += KG_W) mv = kg_max(mv, kg_load(xr + j));
            for (int l = 0; l < KG_W; l++) m = mv[l] > m ? mv[l] : m;
        }
        for (; j < c; j++) m = xr[j] > m ? xr[j] : m;
        kgv ms = kg_splat(m), sv = kg_splat(0.0f);
        float s = 0.0f;
        for (j = 0; j + KG_W <= c; j += KG_W) {
            kgv e = KG_EXP(kg_load(xr + j) - ms);
            kg_store(yr + j, e);
            sv += e;
        }
        for (int l = 0; l < KG_W; l++) s += sv[l];
        for (; j < c; j++) { float e = __builtin_expf(xr[j] - m); yr[j] = e; s += e; }
        kgv inv = kg_splat(1.0f / s);
        for (j = 0; j + KG_W <= c; j += KG_W) kg_store(yr + j, kg_load(yr + j) * inv);
        for (; j < c; j++) yr[j] *= 1.0f / s;
    }
}
