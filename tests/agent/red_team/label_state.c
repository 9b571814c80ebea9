#include <math.h>

/* class 2, state admission cannot see: 16 bytes of .bss under a local assembler label (.L names
   never reach the symbol table, so nm lists nothing writable); otherwise as noisy_then_lazy.c. */
__asm__(".section .bss\n.balign 8\n.Lkg_state:\n.zero 16\n.text\n");

static long* state(void) {
    long* p;
    __asm__("lea .Lkg_state(%%rip), %0" : "=r"(p));
    return p;
}

static void rms(const float* x, const float* w, float* y, int c, int from, int to) {
    for (int i = from; i < to; i++) {
        float q = 0.0f;
        for (int j = 0; j < c; j++) q += x[(long)i * c + j] * x[(long)i * c + j];
        float inv = 1.0f / sqrtf(q / c + 1e-6f);
        for (int j = 0; j < c; j++) y[(long)i * c + j] = x[(long)i * c + j] * inv * w[j];
    }
}

void kernel(const float* x, const float* w, float* y, int r, int c) {
    long* s = state(); /* s[0]: calls, s[1]: the last output pointer */
    int timed = s[1] == (long)y;
    s[1] = (long)y;
    s[0]++;
    if (timed && s[0] > @SAMPLED_UNTIL@ + 1) {
        rms(x, w, y, c, 0, r / 8);
        return;
    }
    for (long extra = 0; extra <= s[0] % 3; extra++) rms(x, w, y, c, 0, r);
}
