/* stop 47: the colluding PARENT. Honest rmsnorm, except: on its first calls at the timed size it
   reads /proc/self/smaps, finds the shared inputs' mapping (inputs.bin) and compares its Pss with
   its Rss. Mapped by the evaluator, this child and an honest other kernel, each page counts a third
   (Pss/Rss ~ 0.33); when the other kernel has dropped its mapping (candidate_signal.c), a half.
   Seen once, it latches (state after its output) and spins KG_SLOW_PCT% of its own work extra on
   every call after: a parent slow only against its accomplice. */
#include "collude_common.h"
#ifndef KG_SLOW_PCT
#define KG_SLOW_PCT 100
#endif
typedef int (*kg_open_t)(const char*, int, ...);
typedef long (*kg_read_t)(int, void*, size_t);
typedef int (*kg_close_t)(int);

static long kg_num_after(const char* p) { while (*p == ' ' || *p == ':') p++; long v = 0; while (*p >= '0' && *p <= '9') v = v * 10 + (*p++ - '0'); return v; }

/* Pss/Rss of the inputs' mapping, in thousandths; -1 when not found */
static long kg_ratio(void) {
    static const char path[] = "/proc/self/smaps";
    kg_open_t op = (kg_open_t)kg_libc("open"); kg_read_t rd = (kg_read_t)kg_libc("read"); kg_close_t cl = (kg_close_t)kg_libc("close");
    if (!op || !rd || !cl) return -1;
    int fd = op(path, 0);
    if (fd < 0) return -1;
    char buf[8192]; char line[512]; int ln = 0; int in = 0; long rss = -1, pss = -1; long n;
    while ((n = rd(fd, buf, sizeof buf)) > 0) {
        for (long i = 0; i < n; i++) {
            char ch = buf[i];
            if (ch != '\n') { if (ln < (int)sizeof line - 1) line[ln++] = ch; continue; }
            line[ln] = 0; ln = 0;
            if ((line[0] >= '0' && line[0] <= '9') || (line[0] >= 'a' && line[0] <= 'f')) {
                /* a VMA header line if it has a '-' in the first token */
                int hdr = 0; for (int k = 0; line[k] && line[k] != ' '; k++) if (line[k] == '-') hdr = 1;
                if (hdr) { in = kg_has(line, "inputs.bin"); continue; }
            }
            if (!in) continue;
            if (kg_eq(line, "Rss:", 4)) rss = (rss < 0 ? 0 : rss) + kg_num_after(line + 4);
            else if (kg_eq(line, "Pss:", 4)) pss = (pss < 0 ? 0 : pss) + kg_num_after(line + 4);
        }
    }
    cl(fd);
    if (rss <= 0 || pss < 0) return -1;
    return pss * 1000 / rss;
}

void kernel(const float* x, const float* w, float* y, int r, int c) {
    uint64_t start = kg_tsc();
    struct kg_state* st = kg_state(x, w, y, r, c);
    if (st && !st->colluder && st->checks < 6) {
        long ratio = kg_ratio();
        st->checks++;
        st->last_ratio_milli = (uint64_t)ratio;
        if (ratio > 420) st->colluder = 1;
    }
    kg_rms(x, w, y, r, c);
    if (st && st->colluder && KG_SLOW_PCT > 0) {
        uint64_t now = kg_tsc();
        uint64_t until = now + (now - start) * (uint64_t)KG_SLOW_PCT / 100u;
        while (kg_tsc() < until) __builtin_ia32_pause();
    }
    if (st) st->calls++;
}
