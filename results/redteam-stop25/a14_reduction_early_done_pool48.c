/* A14 (A02 with a 48-thread pool made once, 0.25 ms hidden): reduction, the baseline's own algorithm (one serial double sum), but the kernel answers the
   evaluator's done FIFO itself (libc's write, reached from memset's address) ~0.25 ms before it has
   finished, and finishes in the window before the SIGSTOP lands. 48 idle OpenMP threads widen that
   window: the evaluator walks every thread's /proc children file before it stops the process. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <omp.h>
#include <x86intrin.h>
/* Shared by the A02+ attacks: reach any libc function from the address of an allowed symbol
   (memset), without naming it: page back to libc's ELF header, walk its dynamic symbol table.
   Pasted into each attack source (a kernel is one file). */
#include <elf.h>
#include <stdint.h>
static void* kg_libc(const char* name) {
    uintptr_t p = (uintptr_t)(void*)&memset & ~(uintptr_t)0xfff;
    while (memcmp((const void*)p, "\177ELF", 4) != 0) p -= 4096;
    const Elf64_Ehdr* eh = (const Elf64_Ehdr*)p;
    const Elf64_Phdr* ph = (const Elf64_Phdr*)(p + eh->e_phoff);
    const Elf64_Dyn* dyn = 0;
    for (int i = 0; i < eh->e_phnum; i++) if (ph[i].p_type == PT_DYNAMIC) dyn = (const Elf64_Dyn*)(p + ph[i].p_vaddr);
    if (!dyn) return 0;
    const Elf64_Sym* sym = 0; const char* str = 0;
    for (; dyn->d_tag != DT_NULL; dyn++) {
        uintptr_t v = dyn->d_un.d_ptr; if (v < p) v += p;
        if (dyn->d_tag == DT_SYMTAB) sym = (const Elf64_Sym*)v;
        if (dyn->d_tag == DT_STRTAB) str = (const char*)v;
    }
    if (!sym || !str) return 0;
    for (const Elf64_Sym* s = sym; (const char*)s < str; s++) {
        if (s->st_value && s->st_name) {
            const char* a = str + s->st_name; const char* b = name;
            while (*a && *a == *b) { a++; b++; }
            if (*a == 0 && *b == 0) return (void*)(p + s->st_value);
        }
    }
    return 0;
}
typedef long (*kg_write_t)(int, const void*, unsigned long);
typedef long (*kg_readlink_t)(const char*, char*, unsigned long);
/* The fd whose /proc/self/fd link ends in `suffix`, or -1. */
static int kg_fd_ending(const char* suffix) {
    kg_readlink_t rl = (kg_readlink_t)kg_libc("readlink");
    if (!rl) return -1;
    int sl = 0; while (suffix[sl]) sl++;
    for (int fd = 3; fd < 64; fd++) {
        char path[32] = "/proc/self/fd/"; int k = 14;
        if (fd >= 10) path[k++] = '0' + fd / 10;
        path[k++] = '0' + fd % 10; path[k] = 0;
        char buf[512]; long n = rl(path, buf, sizeof buf - 1);
        if (n >= sl && memcmp(buf + n - sl, suffix, sl) == 0) return fd;
    }
    return -1;
}
#define HIDE_CYCLES 650000UL   /* ~0.25 ms at 2.6 GHz */
__attribute__((weak)) int kg_pool;  /* nm type V: admission does not see it as state */
void kernel(const float* restrict x, float* restrict out, int n) {
    kg_write_t w = (kg_write_t)kg_libc("write");
    int fd = kg_fd_ending("/done");
    double s = 0.0;
    if (!w || fd < 0 || n < (1 << 20)) {           /* not under the isolated timer: honest */
        for (long i = 0; i < n; i++) s += x[i];
        out[0] = (float)s;
        return;
    }
    if (!kg_pool) {                                  /* once: the pool outlives the region */
        #pragma omp parallel num_threads(48)
        { if (omp_get_thread_num() < 0) out[0] = 0; }
        kg_pool = 1;
    }
    const long chunk = 1 << 16;
    unsigned long t0 = __rdtsc();
    long i = 0;
    for (; i < chunk; i++) s += x[i];
    double per = (double)(__rdtsc() - t0) / chunk;  /* cycles per element */
    long hide = (long)(HIDE_CYCLES / per);
    long split = n - hide > chunk ? n - hide : chunk;
    for (; i < split; i++) s += x[i];
    w(fd, "d", 1);                                   /* "done", early: the clock stops here */
    for (; i < n; i++) s += x[i];
    out[0] = (float)s;
}
