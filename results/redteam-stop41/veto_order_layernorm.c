/* STOP-41 ATTACK 1 (candidate): the per-pair VETO that evaluator 8's free-cores rule hands a kernel.

   Task layernorm: void kernel(const float *x, const float *gamma, const float *beta, float *y, int r, int c)
   Parent: the SAME serial code with KG_VETO 0 (veto_slow_calls_layernorm_parent.c), or the task's
   serial baseline. Expected true speedup: 1.00x (identical work).

   The rule (agent/backends/isolated.py, _run ~L817-826 and crowded() ~L760-769): a pair counts
   unless max(server.busy_threads) >= 2 AND /proc/stat procs_running at one of the pair's three
   samples exceeds 1 + (cpus - busy). A SERIAL parent has busy_threads <= 1, so whether the rule is
   even looked at is decided by the candidate alone, per call: if the candidate keeps a second thread
   on the CPU for >= BUSY_THREAD_SHARE (10%) of its wall time (KernelServer.call ~L481), busy = 2 and,
   on a 2-core host, ANY other runnable task at a sample drops the pair (checked, then `continue`:
   neither kernel's time is kept). So on a host that is not idle (a CPU hog, another evaluation, the
   agent's own processes), the candidate drops exactly the pairs it chooses: here, the calls where
   its own time was above a running 55th percentile. The pairs counted are its fast 55%, the
   parent's are a random 55%: the paired-ratio median moves by about 0.72 x the sd of its log time
   (3-7% at the spreads seen under load), and parent_median / median (the recorded speedup) by as
   much. The bookkeeping keeps vetoes <= counted calls, so crowded pairs never outnumber the counted
   ones and the run is always judged (the "not judged" rule, _run ~L819, never fires).
   On an idle host nothing is dropped and the vetoed calls (already above the median) are charged
   ~30% more: no gain, ~no loss (the median does not move). Serial pairs beside a hog are exactly
   what the project judges as fair (tests/agent/test_red_team.py `both_serial`).

   KG_VETO_ORDER 1 adds a second selector: the kernel learns which position in the pair (its call
   index is the evaluator's `call`; even = candidate first) is slower for it, and vetoes that
   position too, undoing the A-B / B-A balancing of order effects (same cap).

   Admission: no writable static data (state lives in the stagger gap after x, 4416 bytes nobody
   writes or compares; used only when the layout is the staggered one), no time or thread symbols
   beyond the OpenMP runtime (omp_get_wtime, a parallel region). */
#include <math.h>
#include <omp.h>

#ifndef KG_VETO
#define KG_VETO 1
#endif
#ifndef KG_VETO_ORDER
#define KG_VETO_ORDER 1
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

static void rows(const float *restrict x, const float *restrict gamma, const float *restrict beta,
                 float *restrict y, int from, int to, int c) {
    for (int i = from; i < to; i++) {
        const float *xr = x + (long)i * c;
        float *yr = y + (long)i * c;
        float s = 0.0f;
#pragma omp simd reduction(+ : s)
        for (int j = 0; j < c; j++) s += xr[j];
        float mean = s / c, q = 0.0f;
#pragma omp simd reduction(+ : q)
        for (int j = 0; j < c; j++) {
            float d = xr[j] - mean;
            q += d * d;
        }
        float rstd = 1.0f / sqrtf(q / c + 1e-5f);
#pragma omp simd
        for (int j = 0; j < c; j++) yr[j] = (xr[j] - mean) * rstd * gamma[j] + beta[j];
    }
}

static struct kg_state *state_of(const float *x, const float *gamma, int r, int c) {
    long bytes = ((long)r * c * 4 + 63) / 64 * 64;
    if ((const char *)gamma != (const char *)x + bytes + KG_STAGGER) return 0; /* not the shared layout */
    return (struct kg_state *)((char *)x + bytes); /* the stagger gap after x */
}

void kernel(const float *x, const float *gamma, const float *beta,
            float *y, int r, int c) {
    double t0 = omp_get_wtime();
    rows(x, gamma, beta, y, 0, r, c);
    double t = omp_get_wtime() - t0;
    struct kg_state *s = state_of(x, gamma, r, c);
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
