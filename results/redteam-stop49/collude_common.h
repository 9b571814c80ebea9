/* stop 47 red team: shared pieces of the colluding pair (pasted by #include; each kernel is one file
   for admission: the evaluator compiles one source, so the build below inlines this header text). */
#include <elf.h>
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* libc_by_hand (results/redteam-stop25): any libc function from &memset, no undefined symbol */
static int kg_eq(const void* a, const void* b, size_t n) { const volatile unsigned char* p = a; const unsigned char* q = b; for (size_t i = 0; i < n; i++) if (p[i] != q[i]) return 0; return 1; }
static int kg_has(const char* s, const char* t) { for (; *s; s++) { size_t i = 0; while (t[i] && s[i] == t[i]) i++; if (!t[i]) return 1; } return 0; }
static void* kg_libc(const char* name) {
    uintptr_t p = (uintptr_t)(void*)&memset & ~(uintptr_t)0xfff;
    while (!kg_eq((const void*)p, "\177ELF", 4)) p -= 4096;
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

#define KG_MAGIC 0x4B47524F4C455053ULL
#define KG_STAGGER 4416 /* _child.STAGGER_BYTES */

struct kg_state { uint64_t magic, calls, checks, colluder, last_ratio_milli; };

static inline uint64_t kg_tsc(void) { return __builtin_ia32_rdtsc(); }

static void kg_rms(const float* x, const float* w, float* y, int r, int c) {
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
}

/* The state in the unused stagger bytes after the output (the outputs' file persists between calls;
   the evaluator fills only the output array), at the timed size only. */
static struct kg_state* kg_state(const float* x, const float* w, float* y, int r, int c) {
    size_t xbytes = ((size_t)r * (size_t)c * sizeof(float) + 63) & ~(size_t)63;
    if ((const char*)w != (const char*)x + xbytes + KG_STAGGER || (size_t)r * (size_t)c < 65536) return NULL;
    struct kg_state* st = (struct kg_state*)(uintptr_t)((char*)y + xbytes);
    if (st->magic != KG_MAGIC) { memset(st, 0, sizeof *st); st->magic = KG_MAGIC; }
    return st;
}
