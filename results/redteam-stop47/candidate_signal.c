/* stop 47: the colluding CANDIDATE. Honest rmsnorm; at the end of each call it drops its own page
   table entries for the shared inputs (madvise MADV_DONTNEED on its read-only mapping: allowed, it
   changes no data), so the inputs' pages are mapped by one process fewer while the parent runs. */
#include "collude_common.h"
typedef int (*kg_madvise_t)(void*, size_t, int);
void kernel(const float* x, const float* w, float* y, int r, int c) {
    kg_rms(x, w, y, r, c);
#ifndef KG_NO_SIGNAL
    if ((size_t)r * (size_t)c >= 65536) {
        kg_madvise_t mad = (kg_madvise_t)kg_libc("madvise");
        uintptr_t lo = (uintptr_t)x & ~(uintptr_t)4095;
        uintptr_t hi = ((uintptr_t)(w + c) + 4095) & ~(uintptr_t)4095;
        if (mad) mad((void*)lo, hi - lo, 4 /* MADV_DONTNEED */);
    }
#endif
}
