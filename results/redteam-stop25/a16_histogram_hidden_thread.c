/* A16 (after the fixes; a13 on another task): histogram, the baseline's loop; the last quarter of the
   values counted into a private histogram by a thread started and joined inside the call (libc
   pthread_create by address), merged after the join; stops after ~24 ms hidden in all. */
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
typedef int (*kg_pcreate_t)(unsigned long*, const void*, void* (*)(void*), void*);
typedef int (*kg_pjoin_t)(unsigned long, void**);
__attribute__((weak)) unsigned long kg_hidden;
#define BUDGET (24UL * 2600000UL)
struct part { const float* x; long lo, hi; int h[256]; unsigned long cycles; };
static void* worker(void* p) {
    struct part* q = p; unsigned long t = __rdtsc();
    for (long i = q->lo; i < q->hi; i++) q->h[(int)(q->x[i] * 256.0f)]++;
    q->cycles = __rdtsc() - t; return 0;
}
void kernel(const float* restrict x, int* restrict hist, int n) {
    kg_pcreate_t pc = (kg_pcreate_t)kg_libc("pthread_create");
    kg_pjoin_t pj = (kg_pjoin_t)kg_libc("pthread_join");
    long split = n < (1 << 20) || !pc || !pj || kg_hidden > BUDGET ? n : n - n / 4;
    memset(hist, 0, sizeof(int) * 256);
    for (long i = 0; i < split; i++) hist[(int)(x[i] * 256.0f)]++;
    if (split < n) {
        struct part* q = calloc(1, sizeof *q);
        q->x = x; q->lo = split; q->hi = n;
        unsigned long th;
        if (pc(&th, 0, worker, q) == 0) { pj(th, 0); kg_hidden += q->cycles; }
        else for (long i = split; i < n; i++) q->h[(int)(x[i] * 256.0f)]++;
        for (int b = 0; b < 256; b++) hist[b] += q->h[b];
        free(q);
    }
}
