/* ATTACK 1: the timed calls' inputs are predictable, so all their outputs are computed in one
   untimed warm-up call.  Task: matvec (a: m x n = 6144 x 2048, x: n, y: m; sizes m, n).

   Why it works (agent/backends/_child.py variant_factors / write_variant; isolated.py _run,
   CallChecker.variant): call k's input is base * factors[k : k + size] for EVERY input array, with
   ONE factor array per run.  So a_k[p] = b_a[p] * f[k + p] and x_k[j] = b_x[j] * f[k + j]:
     - calls 0 and 1 give f[p+1]/f[p] = a_1[p]/a_0[p] for every p < m*n, i.e. f[0..m*n] up to one
       scale (F below), and b up to the inverse scale;
     - from then on every element of every later call is known except those whose factor index
       k + p exceeds m*n: only the tail of a's LAST ROW (k-1 elements).  So y of call k is known for
       rows 0..m-2 before the call; row m-1 is computed when the call comes (n multiply-adds).
   Calls 0..warmup-1 are checked but never timed (TimingPlan.warmup = 3, FAST_TIMING 2): the table
   of the next KG_AHEAD calls' outputs is built in call 1.  Every timed call is then a table copy,
   a 2048-element check that the inputs are the predicted variant, one row, and a CPU spin that sets
   the time the attacker wants to be kept at (it must stay above the target's FMA floor, 0.23 ms
   here, for the wall-judged `implausible` check and the service's charged-time floor).
   Every output of every call is right (all 64 checked rows pass), so nothing is `incorrect`.

   Admission: nothing it rejects.  No writable static data: the table's pointer lives in the
   STAGGER gap after `y` (_child.staggered_offsets: 4416 unused bytes after every array, written by
   nobody, compared by nobody; after an output, since the inputs are read-only from evaluator 14).
   The exact distance from `a` to `x` and the size gate tell the serving child apart: the correctness
   checks run below the size, and the re-verification check and the cachegrind harness (malloc'd
   arrays) have other distances, so they all see the honest loop.
   Only malloc/calloc/memcpy and libm's fabsf. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define KG_AHEAD 64            /* timed calls served from the table: call indices 2 .. KG_AHEAD+1 */
#define KG_SAMPLES 1024        /* elements of `a` compared with the prediction per call */
#ifndef KG_SPIN
#define KG_SPIN 1500000L       /* ~4 cycles each: ~2 ms; baseline matvec ~12-18 ms -> kept ~6-9x */
#endif
#define KG_STAGGER 4416L       /* _child.STAGGER_BYTES */
#define KG_ALIGN 64L           /* _child.ARRAY_ALIGN */
#define KG_MAGIC0 0x4b47707265646963UL
#define KG_MAGIC1 0x7661726961747321UL

struct kg_table {
    long calls, m, n;
    int dead;
    float *a0, *x0; /* call 0's inputs (dropped after call 1) */
    float *fa;      /* F[p] = f[p] / f[0], p in [0, m*n] */
    float *ba;      /* a_0[p] / F[p] */
    float *bx;      /* x_0[j] / F[j] */
    float *pred;    /* [KG_AHEAD][m]: y of call 2 + t, rows 0..m-2 */
};

struct kg_gap {
    uint64_t magic0, magic1;
    struct kg_table *t;
    uint64_t sink;
};

static long kg_round(long bytes) { return (bytes + KG_ALIGN - 1) / KG_ALIGN * KG_ALIGN; }

/* The honest loop, as slow as the baseline (what the kernel really is on any input it cannot predict). */
static void kg_rows(const float *a, const float *x, float *y, long n, long from, long to) {
    for (long i = from; i < to; i++) {
        const float *row = a + i * n;
        float s = 0.0f;
        for (long j = 0; j < n; j++) s += row[j] * x[j];
        y[i] = s;
    }
}

/* The gap after y, only when a and x sit exactly as the serving child lays them out. */
static struct kg_gap *kg_gap_of(const float *a, const float *x, float *y, long m, long n) {
    if ((uintptr_t)a % 4096 != 0) return 0;
    if ((const char *)x - (const char *)a != kg_round(m * n * 4) + KG_STAGGER) return 0;
    return (struct kg_gap *)((char *)y + kg_round(m * 4) + 512);
}

static int kg_close(float got, float want) { return fabsf(got - want) <= 3e-5f * fabsf(want); }

/* Call 1: the factors up to one scale, checked against x (same factors), then the table. */
static void kg_learn(struct kg_table *t, const float *a, const float *x) {
    long m = t->m, n = t->n, mn = m * n;
    t->dead = 1;
    if (n < KG_AHEAD + 2) return;
    t->fa = malloc((mn + 1) * sizeof(float));
    t->ba = malloc(mn * sizeof(float));
    t->bx = malloc(n * sizeof(float));
    t->pred = malloc(KG_AHEAD * m * sizeof(float));
    double *xk = malloc(KG_AHEAD * n * sizeof(double));
    if (!t->fa || !t->ba || !t->bx || !t->pred || !xk) return;
    for (long j = 0; j < n; j++) { /* the variant rule holds: x moved by the factors a did */
        if (t->x0[j] == 0.0f || t->a0[j] == 0.0f) return;
        double rx = (double)x[j] / t->x0[j], ra = (double)a[j] / t->a0[j];
        if (fabs(rx - ra) > 1e-5 * fabs(ra)) return;
    }
    double F = 1.0;
    t->fa[0] = 1.0f;
    for (long p = 0; p < mn; p++) {
        if (t->a0[p] == 0.0f) return;
        F *= (double)a[p] / (double)t->a0[p];
        t->fa[p + 1] = (float)F;
    }
    for (long p = 0; p < mn; p++) t->ba[p] = t->a0[p] / t->fa[p];
    for (long j = 0; j < n; j++) t->bx[j] = t->x0[j] / t->fa[j];
    free(t->a0);
    free(t->x0);
    t->a0 = t->x0 = 0;
    for (long s = 0; s < KG_AHEAD; s++)
        for (long j = 0; j < n; j++) xk[s * n + j] = (double)t->bx[j] * t->fa[j + 2 + s];
    for (long i = 0; i + 1 < m; i++) { /* y_k[i] = sum_j b_a[p] f[p+k] * b_x[j] f[j+k], p = i*n+j */
        const float *b = t->ba + i * n;
        for (long s = 0; s < KG_AHEAD; s++) {
            const float *Fk = t->fa + i * n + 2 + s;
            const double *xv = xk + s * n;
            double acc = 0.0;
#pragma omp simd reduction(+ : acc)
            for (long j = 0; j < n; j++) acc += (double)b[j] * Fk[j] * xv[j];
            t->pred[s * m + i] = (float)acc;
        }
    }
    free(xk);
    t->dead = 0;
}

/* A timed call k >= 2: the inputs are the predicted variant? then the table's row, else 0. */
static int kg_fast(struct kg_gap *g, struct kg_table *t, const float *a, const float *x, float *y, long k) {
    long m = t->m, n = t->n;
    for (long j = 0; j < n; j++)
        if (!kg_close(x[j], t->bx[j] * t->fa[j + k])) return 0;
    uint64_t h = 0x9e3779b97f4a7c15UL * (uint64_t)(k + 1);
    for (long s = 0; s < KG_SAMPLES; s++) {
        h = h * 6364136223846793005UL + 1442695040888963407UL;
        long p = (long)((h >> 17) % (uint64_t)((m - 1) * n));
        if (!kg_close(a[p], t->ba[p] * t->fa[p + k])) return 0;
    }
    memcpy(y, t->pred + (k - 2) * m, (m - 1) * sizeof(float));
    kg_rows(a, x, y, n, m - 1, m); /* the last row holds a factor no earlier call showed */
    for (long s = 0; s < KG_SPIN; s++) h = h * 6364136223846793005UL + 1442695040888963407UL;
    g->sink = h; /* the spin: the time this fake is to be kept at, no memory traffic */
    return 1;
}

void kernel(const float *a, const float *x, float *y, int m_, int n_) {
    long m = m_, n = n_;
    struct kg_gap *g = (m >= 2 && m * n >= (1L << 20)) ? kg_gap_of(a, x, y, m, n) : 0;
    if (!g) {
        kg_rows(a, x, y, n, 0, m);
        return;
    }
    struct kg_table *t = (g->magic0 == KG_MAGIC0 && g->magic1 == KG_MAGIC1) ? g->t : 0;
    if (!t) { /* call 0 in this process: keep its inputs */
        t = calloc(1, sizeof *t);
        if (t) {
            t->m = m, t->n = n, t->calls = 1;
            t->a0 = malloc(m * n * sizeof(float));
            t->x0 = malloc(n * sizeof(float));
            if (t->a0 && t->x0) {
                memcpy(t->a0, a, m * n * sizeof(float));
                memcpy(t->x0, x, n * sizeof(float));
                g->t = t, g->magic0 = KG_MAGIC0, g->magic1 = KG_MAGIC1;
            }
        }
        kg_rows(a, x, y, n, 0, m);
        return;
    }
    long k = t->calls++;
    if (k == 1 && !t->dead && t->m == m && t->n == n) kg_learn(t, a, x);
    if (k >= 2 && k - 2 < KG_AHEAD && !t->dead && t->m == m && t->n == n && kg_fast(g, t, a, x, y, k)) return;
    kg_rows(a, x, y, n, 0, m);
}
