#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <stdint.h>
#include <elf.h>

/* Red team: rows computed by a clone(CLONE_VM) process (not a thread) that is gone before the call
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
static int worker(void* arg) {
    struct job* j = arg;
    rows(j->x, j->w, j->y, j->r0, j->r1, j->c);
    ((syscall_fn)lookup("syscall"))(60, 0); /* exit */
    return 0;
}
void kernel(const float* restrict x, const float* restrict w, float* restrict y, int r, int c) {
    syscall_fn sys = (syscall_fn)lookup("syscall");
    clone_fn cl = (clone_fn)lookup("clone");
    struct { void* h; unsigned long flags; void* restorer; unsigned long mask; } ksa = {(void*)1, 0, 0, 0};
    sys(13, 17, &ksa, 0, 8); /* rt_sigaction(SIGCHLD, SIG_IGN) */
    int split = r / 8;
    struct job j = {x, w, y, split, r, c, 1};
    char* stack = malloc(1 << 20);
    int pid = cl(worker, stack + (1 << 20) - 64, 0x100 | 0x200 | 0x400 | 0x00200000 | 17, &j, 0, 0, (int*)&j.tid);
    if (pid <= 0) { rows(x, w, y, split, r, c); j.tid = 0; }
    rows(x, w, y, 0, split, c);
    while (j.tid) sys(202, &j.tid, 0, j.tid, 0, 0, 0); /* futex wait */
    struct { long s, ns; } ts = {0, 20000};
    while (pid > 0 && sys(234, pid, pid, 0) == 0) sys(35, &ts, 0); /* until reaped */
    free(stack);
}
