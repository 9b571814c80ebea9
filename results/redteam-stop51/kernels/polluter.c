/* rmsnorm (honest.c's loop), then, at the end of every call, work meant to be paid by the NEXT call
   (the baseline's, in a three-kernel round): KG_PT sparse pages mapped, touched and unmapped (each
   frees a page-table page, through RCU on a KVM guest: freed in softirq a grace period later, on the
   home CPU, charged to whatever thread runs there since this kernel has no IRQ time accounting), and
   KG_DIRTY_MB of a private buffer written (dirty lines left in the shared L3).
   Past admission only (it calls mmap/munmap directly). */
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#ifndef KG_PT
#define KG_PT 1024
#endif
#ifndef KG_DIRTY_MB
#define KG_DIRTY_MB 40
#endif
static char* dirty;
void kernel(const float* x, const float* w, float* y, int r, int c) {
    for (int i = 0; i < r; i++) {
        const float* xr = x + (size_t)i * (size_t)c;
        float* yr = y + (size_t)i * (size_t)c;
        float q0 = 0, q1 = 0, q2 = 0, q3 = 0, q4 = 0, q5 = 0, q6 = 0, q7 = 0;
        int j = 0;
        for (; j + 8 <= c; j += 8) {
            q0 += xr[j] * xr[j]; q1 += xr[j + 1] * xr[j + 1]; q2 += xr[j + 2] * xr[j + 2]; q3 += xr[j + 3] * xr[j + 3];
            q4 += xr[j + 4] * xr[j + 4]; q5 += xr[j + 5] * xr[j + 5]; q6 += xr[j + 6] * xr[j + 6]; q7 += xr[j + 7] * xr[j + 7];
        }
        float q = ((q0 + q1) + (q2 + q3)) + ((q4 + q5) + (q6 + q7));
        for (; j < c; j++) q += xr[j] * xr[j];
        float inv = 1.0f / sqrtf(q / c + 1e-6f);
        for (j = 0; j < c; j++) yr[j] = xr[j] * inv * w[j];
    }
    if ((size_t)r * (size_t)c < 65536) return; /* the timed size only */
    if (KG_PT > 0) {
        size_t span = (size_t)KG_PT << 21; /* one 4 KiB page per 2 MiB: one page-table page each */
        char* m = mmap(0, span, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        if (m != MAP_FAILED) {
            for (size_t k = 0; k < (size_t)KG_PT; k++) m[k << 21] = 1;
            munmap(m, span);
        }
    }
    if (KG_DIRTY_MB > 0) {
        if (!dirty) dirty = mmap(0, (size_t)KG_DIRTY_MB << 20, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (dirty != MAP_FAILED && dirty) for (size_t k = 0; k < ((size_t)KG_DIRTY_MB << 20); k += 64) dirty[k] = (char)k;
    }
}
