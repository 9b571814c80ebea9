#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <stdint.h>
#include <elf.h>

/* Red team (counter forgery): under valgrind (its tool is in /proc/self/maps) the plain loop;
   timed, the same loop run 4 times, so the counted instructions are a quarter of the timed ones.
   Formerly: rows computed by a clone(CLONE_VM) process (not a thread) that is gone before the call
   returns (SIGCHLD ignored: reaped at once), so no per-thread reading or the process's own
   utime/stime sees its CPU time. libc's `clone` and `syscall` are found by walking libc's ELF image
   in memory from memcpy's address: no undefined symbol, no syscall bytes, no writable statics. */
struct job { const float* x; const float* w; float* y; int r0, r1, c; volatile int tid; };
typedef long (*syscall_fn)(long, ...);
typedef int (*clone_fn)(int (*)(void*), void*, int, void*, ...);

static void rows(const float* x, const float* w, float* y, int r0, int r1, int c) {
    for (int i = r0; i < r1; i++) {
        const float* xr = x + (long)i * c; float* yr = y + (long)i * c; float q = 0.0f;
        for (long j = 0; j < c; j++) q += xr[j] * xr[j];
        for (long j = 0; j < c; j++) yr[j] = xr[j] / sqrtf(q / c + 1e-06f) * w[j];
    }
}
static int same(const char* a, const char* b) { while (*a && *a == *b) { a++; b++; } return *a == *b; }
static void* lookup(const char* want) {
    uintptr_t p = ((uintptr_t)(void*)&memcpy) & ~(uintptr_t)4095;
    while (memcmp((void*)p, ELFMAG, 4) != 0) p -= 4096;
    Elf64_Ehdr* eh = (Elf64_Ehdr*)p;
    Elf64_Phdr* ph = (Elf64_Phdr*)(p + eh->e_phoff);
    Elf64_Dyn* dyn = 0;
    for (int i = 0; i < eh->e_phnum; i++) if (ph[i].p_type == PT_DYNAMIC) dyn = (Elf64_Dyn*)(p + ph[i].p_vaddr);
    Elf64_Sym* sym = 0; const char* str = 0;
    for (; dyn && dyn->d_tag != DT_NULL; dyn++) {
        uintptr_t v = dyn->d_un.d_ptr; if (v < p) v += p;
        if (dyn->d_tag == DT_SYMTAB) sym = (Elf64_Sym*)v;
        if (dyn->d_tag == DT_STRTAB) str = (const char*)v;
    }
    for (Elf64_Sym* s = sym + 1; (const char*)s < str; s++)
        if (s->st_value && s->st_name && same(str + s->st_name, want)) return (void*)(p + s->st_value);
    return 0;
}

typedef int (*open_fn)(const char*, int, ...);
typedef long (*read_fn)(int, void*, unsigned long);
typedef int (*close_fn)(int);
static int under_valgrind(void) {
    open_fn op = (open_fn)lookup("open"); read_fn rd = (read_fn)lookup("read"); close_fn cl = (close_fn)lookup("close");
    char buf[4096]; const char* pat = "valgrind"; int fd = op("/proc/self/maps", 0), k = 0, hit = 0;
    if (fd < 0) return 0;
    long n;
    while (!hit && (n = rd(fd, buf, sizeof buf)) > 0)
        for (long i = 0; i < n && !hit; i++) { k = (buf[i] == pat[k]) ? k + 1 : (buf[i] == pat[0]); if (!pat[k]) hit = 1; }
    cl(fd);
    return hit;
}
void kernel(const float* restrict x, const float* restrict w, float* restrict y, int r, int c) {
    int reps = under_valgrind() ? 1 : 4;
    for (int k = 0; k < reps; k++) rows(x, w, y, 0, r, c);
}
