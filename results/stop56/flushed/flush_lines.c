/* Write back and evict every cache line of [p, p + n) from every cache (clflushopt, then a fence):
   the declared cold state of results/stop56/flushed/triangulate_flushed.py. */
#include <immintrin.h>
#include <stdint.h>

void flush_lines(const char *p, long n) {
    const char *start = (const char *)((uintptr_t)p & ~(uintptr_t)63);
    for (const char *q = start; q < p + n; q += 64) _mm_clflushopt((void *)q);
    _mm_sfence();
}
