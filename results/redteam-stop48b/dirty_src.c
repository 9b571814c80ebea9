/* stop 48b probe: can a candidate slow the trusted baseline through the shared caches? An honest
   rmsnorm (kg_rms) that, at the end of each timed call, dirties KG_DIRTY_MB of a private buffer
   (write-allocated lines left dirty in L2/L3: their write-back is paid by whoever evicts them next:
   the evaluator's read-back or the baseline's call). KG_DIRTY_MB 0 is the control. */
#include "collude_common.h"
#ifndef KG_DIRTY_MB
#define KG_DIRTY_MB 24
#endif
typedef void* (*kg_malloc_t)(size_t);
struct kg_dirty { uint64_t magic, calls; char* buf; };
void kernel(const float* x, const float* w, float* y, int r, int c) {
    kg_rms(x, w, y, r, c);
    size_t xbytes = ((size_t)r * (size_t)c * sizeof(float) + 63) & ~(size_t)63;
    if (KG_DIRTY_MB == 0 || (const char*)w != (const char*)x + xbytes + KG_STAGGER || (size_t)r * (size_t)c < 65536) return;
    struct kg_dirty* st = (struct kg_dirty*)(uintptr_t)((char*)y + xbytes);
    if (st->magic != KG_MAGIC) { st->magic = KG_MAGIC; st->calls = 0; kg_malloc_t m = (kg_malloc_t)kg_libc("malloc"); st->buf = m ? m((size_t)KG_DIRTY_MB << 20) : 0; }
    if (!st->buf) return;
    volatile uint64_t* p = (volatile uint64_t*)st->buf;
    size_t n = ((size_t)KG_DIRTY_MB << 20) / 8;
    for (size_t i = 0; i < n; i += 8) p[i] = i + st->calls;   /* one store per line */
    st->calls++;
}
