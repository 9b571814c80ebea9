/* STOP-41 ATTACK 1 on a noisier, memory-bound task (the gain is ~0.72 x the sd of the candidate's own
   log call time, so a task whose calls spread more gains more). Same mechanism and bookkeeping as
   veto_slow_calls_layernorm.c (read its comment); only the compute and the gap's place differ.
   Task matvec: void kernel(const float *a, const float *x, float *y, int m, int n) (6144 x 2048).
   Parent: veto_slow_calls_matvec_parent.c (identical, KG_VETO 0): true speedup 1.00x. */
#include <math.h>
#include <omp.h>

#ifndef KG_VETO
#define KG_VETO 1
#endif
#ifndef KG_VETO_ORDER
#define KG_VETO_ORDER 0
#endif
#define KG_WARMUP 3        /* TimingPlan().warmup; calls before it are not pairs */
#define KG_KEEP_Q 0.55     /* the share of its own calls the kernel lets count */
#define KG_ETA 0.05
#define KG_SPIN 0.30       /* helper and caller spin this share of the call: > 10% of answered */
#define KG_MAGIC 0x6b673431u
#define KG_STAGGER (4096 + 5 * 64)

struct kg_state {
    unsigned magic, calls, vetoes, counted;
    double thr, pos_sum[2];
    unsigned pos_n[2];
};

static void rows(const float *restrict a, const float *restrict x, float *restrict y, int m, int n) {
    for (int i = 0; i < m; i++) {
        const float *row = a + (long)i * n;
        float s = 0.0f;
#pragma omp simd reduction(+ : s)
        for (int j = 0; j < n; j++) s += row[j] * x[j];
        y[i] = s;
    }
}

/* Since evaluator 14 the inputs are mapped read-only: the state moved from the stagger gap after `a`
   to the one after the output `y` (tests/agent/test_red_team.py runs this file). */
static struct kg_state *state_of(const float *a, const float *x, float *y, int m, int n) {
    long bytes = ((long)m * n * 4 + 63) / 64 * 64;
    if ((const char *)x != (const char *)a + bytes + KG_STAGGER) return 0; /* not the shared layout */
    return (struct kg_state *)((char *)y + ((long)m * 4 + 63) / 64 * 64); /* the stagger gap after y */
}

void kernel(const float *a, const float *x, float *y, int m, int n) {
    double t0 = omp_get_wtime();
    rows(a, x, y, m, n);
    double t = omp_get_wtime() - t0;
    struct kg_state *s = state_of(a, x, y, m, n);
    if (!KG_VETO || !s) return;
    if (s->magic != KG_MAGIC) {
        s->magic = KG_MAGIC;
        s->calls = s->vetoes = s->counted = s->pos_n[0] = s->pos_n[1] = 0;
        s->thr = t;
        s->pos_sum[0] = s->pos_sum[1] = 0.0;
    }
    unsigned k = s->calls++;
    int pos = k & 1; /* 0: the candidate was called first in this pair */
    int slow = t > s->thr;
    s->thr *= slow ? 1.0 + KG_ETA * KG_KEEP_Q : 1.0 - KG_ETA * (1.0 - KG_KEEP_Q);
    if (k < KG_WARMUP) return;
    s->pos_sum[pos] += t;
    s->pos_n[pos]++;
    int bad_pos = 0;
    if (KG_VETO_ORDER && s->pos_n[0] > 4 && s->pos_n[1] > 4) {
        double m0 = s->pos_sum[0] / s->pos_n[0], m1 = s->pos_sum[1] / s->pos_n[1];
        bad_pos = (pos == 0 ? m0 > m1 : m1 > m0);
    }
    /* never more vetoes than counted calls: crowded pairs never outnumber the counted ones */
    if ((slow || bad_pos) && s->vetoes < s->counted) {
        s->vetoes++;
        double end = omp_get_wtime() + KG_SPIN * t;
#pragma omp parallel num_threads(2)
        {
            while (omp_get_wtime() < end) {
            }
        }
    } else {
        s->counted++;
    }
}
