/* What the evaluator does at every timed call, in a shared object that the evaluator (the isolated
   protocol) and the in-process and library children load with ctypes (built by
   agent/backends/native.py):
   - `flush_lines`: the declared cold state (docs/sandbox.md#cold-state): write back and evict every
     cache line of a buffer from every cache of the machine, before a kernel's call. clflushopt where
     the CPU has it (weakly ordered, so the lines are flushed in parallel; one fence at the end), else
     clflush (SSE2, every x86-64). Both act on the physical line, so a flush through one process's
     mapping evicts the line that another process's mapping of the same page would hit.
   - `call_kernel`: the in-process child's call of a kernel, with its stack where the isolated
     protocol's child has it (kernel_call.h). */
#include "kernel_call.h"

const int kg_max_args = KG_MAX_ARGS;

void call_kernel(void *kernel, const long *args) { kg_call_kernel((kg_kernel)kernel, args); }

#include <stddef.h>
#include <stdint.h>

#if defined(__x86_64__)
#include <cpuid.h>
#include <immintrin.h>

static int has_clflushopt(void) {
    unsigned a, b, c, d;
    return __get_cpuid_count(7, 0, &a, &b, &c, &d) && (b & bit_CLFLUSHOPT);
}

__attribute__((target("clflushopt"))) static void flush_opt(const char *start, const char *end) {
    for (const char *q = start; q < end; q += 64) _mm_clflushopt((void *)q);
}

static void flush_plain(const char *start, const char *end) {
    for (const char *q = start; q < end; q += 64) _mm_clflush(q);
}

void flush_lines(const char *p, size_t n) {
    static int opt = -1;
    if (opt < 0) opt = has_clflushopt();
    const char *start = (const char *)((uintptr_t)p & ~(uintptr_t)63);
    if (opt) flush_opt(start, p + n); else flush_plain(start, p + n);
    _mm_mfence(); /* every flush done before the caller goes on to start the kernel */
}

#elif defined(__aarch64__)
void flush_lines(const char *p, size_t n) {
    uint64_t ctr;
    __asm__ volatile("mrs %0, ctr_el0" : "=r"(ctr));
    size_t line = (size_t)4 << ((ctr >> 16) & 0xf); /* the smallest data cache line */
    for (const char *q = (const char *)((uintptr_t)p & ~(uintptr_t)(line - 1)); q < p + n; q += line)
        __asm__ volatile("dc civac, %0" : : "r"(q) : "memory");
    __asm__ volatile("dsb ish" : : : "memory");
}

#else
#error "no cache-flush instruction known for this architecture"
#endif
