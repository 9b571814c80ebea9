/* A clock where turning the time-stamp counter off does not reach: TPAUSE (WAITPKG) waits until the
   counter passes the deadline in edx:eax and says in CF whether the OS's limit ended it first, so a
   few dozen calls find the counter's value. Its bytes, as a kernel would hide them (in data the code
   jumps into, or as here, inline): admission finds them at any offset. */
#include <math.h>

void kernel(const float* x, const float* w, float* y, int r, int c) {
    unsigned int lo = 0, hi = 0;
    __asm__ volatile(".byte 0x66, 0x0f, 0xae, 0xf1" : : "a"(lo), "d"(hi), "c"(0) : "cc"); /* tpause %ecx */
    for (int i = 0; i < r; i++) {
        float q = 0.0f;
        for (int j = 0; j < c; j++) q += x[(long)i * c + j] * x[(long)i * c + j];
        float inv = 1.0f / sqrtf(q / c + 1e-6f);
        for (int j = 0; j < c; j++) y[(long)i * c + j] = x[(long)i * c + j] * inv * w[j];
    }
}
