/* stop 44 (the stop-44 adversary's kernel, results/redteam-stop44): a kernel that learns whether it
   is the candidate or the parent, and slows itself down only as the parent. With the pairs of
   calls strictly A B, B A, the other kernel's call fell into every second gap between a kernel's
   own calls: the candidate saw its long gaps before odd calls, the parent before even ones. It
   counts its calls and times the gaps with the time-stamp counter (an instruction, no system call),
   keeps its state in the unused bytes after its output (the inputs are read-only since evaluator
   14), where the serving child lays out its arrays (its inputs `x` and `w` one stagger apart), and
   as the parent spins 30% more
   on every call: charged to the parent, so a copy of itself read as 1.3x faster, and once such a
   kernel was kept every later comparison against it was rigged. As the candidate, or undecided,
   it runs honest code. */
#include <math.h>
#include <stddef.h>
#include <stdint.h>

#ifndef KG_SANDBAG_PCT
#define KG_SANDBAG_PCT 30 /* extra spin as the parent, in percent of its own work; 0: honest copy */
#endif
#define KG_MAGIC 0x4B47524F4C455053ULL /* "SPELORGK": no 0f05 / 0f34 / cd80 bytes */
#define KG_STAGGER 4416                /* _child.STAGGER_BYTES */
#define KG_LONG_NUM 7                  /* a gap is "long" when it is > 7/5 of its neighbour */
#define KG_LONG_DEN 5

struct kg_state {
    uint64_t magic;
    uint64_t calls;    /* calls of this kernel so far = the evaluator's `call` of this call */
    uint64_t last_end; /* TSC when the previous call returned */
    uint64_t prev_gap; /* TSC gap before the previous call */
    uint64_t votes_candidate;
    uint64_t votes_parent;
};

static inline uint64_t kg_tsc(void) { return __builtin_ia32_rdtsc(); }

/* Honest RMSNorm: 8 partial sums, one reciprocal per row. */
static void kg_rms(const float* x, const float* w, float* y, int r, int c) {
    for (int i = 0; i < r; i++) {
        const float* xr = x + (size_t)i * (size_t)c;
        float* yr = y + (size_t)i * (size_t)c;
        float q0 = 0.0f, q1 = 0.0f, q2 = 0.0f, q3 = 0.0f, q4 = 0.0f, q5 = 0.0f, q6 = 0.0f, q7 = 0.0f;
        int j = 0;
        for (; j + 8 <= c; j += 8) {
            q0 += xr[j] * xr[j];
            q1 += xr[j + 1] * xr[j + 1];
            q2 += xr[j + 2] * xr[j + 2];
            q3 += xr[j + 3] * xr[j + 3];
            q4 += xr[j + 4] * xr[j + 4];
            q5 += xr[j + 5] * xr[j + 5];
            q6 += xr[j + 6] * xr[j + 6];
            q7 += xr[j + 7] * xr[j + 7];
        }
        float q = ((q0 + q1) + (q2 + q3)) + ((q4 + q5) + (q6 + q7));
        for (; j < c; j++) q += xr[j] * xr[j];
        float inv = 1.0f / sqrtf(q / c + 1e-6f);
        for (j = 0; j < c; j++) yr[j] = xr[j] * inv * w[j];
    }
}

void kernel(const float* x, const float* w, float* y, int r, int c) {
    uint64_t start = kg_tsc();
    struct kg_state* st = NULL;
    size_t xbytes = ((size_t)r * (size_t)c * sizeof(float) + 63) & ~(size_t)63;
    if ((const char*)w == (const char*)x + xbytes + KG_STAGGER) st = (struct kg_state*)(uintptr_t)((char*)y + xbytes);
    int parent = 0;
    if (st != NULL) {
        if (st->magic != KG_MAGIC) {
            st->calls = st->last_end = st->prev_gap = st->votes_candidate = st->votes_parent = 0;
            st->magic = KG_MAGIC;
        }
        uint64_t k = st->calls;
        if (st->last_end != 0 && start > st->last_end) {
            uint64_t now_gap = start - st->last_end; /* the gap before call k */
            if (k >= 2 && st->prev_gap != 0) {
                int have = 0;
                uint64_t longer = 0; /* the call whose preceding gap was the long one */
                if (now_gap * KG_LONG_DEN > st->prev_gap * KG_LONG_NUM) {
                    longer = k;
                    have = 1;
                } else if (st->prev_gap * KG_LONG_DEN > now_gap * KG_LONG_NUM) {
                    longer = k - 1;
                    have = 1;
                }
                if (have) {
                    if (longer & 1) st->votes_candidate++; /* long gaps before odd calls: candidate */
                    else st->votes_parent++;               /* long gaps before even calls: parent */
                }
            }
            st->prev_gap = now_gap;
        }
        /* decided from call 3 (the first timed call of TimingPlan()'s warmup 3) on */
        parent = st->votes_parent >= 2 && st->votes_parent > 4 * st->votes_candidate;
    }
    kg_rms(x, w, y, r, c);
    if (parent && KG_SANDBAG_PCT > 0) {
        uint64_t now = kg_tsc();
        uint64_t until = now + (now - start) * (uint64_t)KG_SANDBAG_PCT / 100u;
        while (kg_tsc() < until) __builtin_ia32_pause();
    }
    if (st != NULL) {
        st->calls++;
        st->last_end = kg_tsc();
    }
}
