/* elementwise_chain's baseline over x, z (inputs) and y (output), 8M floats each, staggered as the
   protocols lay them out: (a) all three in one huge-page region (the in-process arena, version 13's
   one file), (b) x and z in one region and y in another (version 14's two files). Medians of 31
   calls each, interleaved, per round. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#define N (8L << 20)
#define STAGGER (4096 + 5 * 64)
#define HUGE (2L << 20)
static void kernel(const float* restrict x, const float* restrict z, float* restrict y, int n) {
    for (long i = 0; i < n; i++) y[i] = 1.5f * x[i] + z[i];
    for (long i = 0; i < n; i++) y[i] = y[i] > 0.0f ? y[i] : 0.0f;
    for (long i = 0; i < n; i++) y[i] = y[i] * x[i];
    for (long i = 0; i < n; i++) y[i] = y[i] - 0.5f * z[i];
}
static char* region(long bytes) {
    char* p = mmap(0, bytes + HUGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    p = (char*)(((unsigned long)p + HUGE - 1) & ~(HUGE - 1));
    madvise(p, bytes, MADV_HUGEPAGE);
    memset(p, 1, bytes);
    return p;
}
static double now(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec + t.tv_nsec * 1e-9; }
static int cmp(const void* a, const void* b) { double d = *(double*)a - *(double*)b; return d < 0 ? -1 : d > 0; }
static double med(float* x, float* z, float* y) {
    double t[31];
    for (int k = 0; k < 31; k++) {
        for (long i = 0; i < N; i++) { x[i] = (float)(i % 7) - 3.0f + k; z[i] = (float)(i % 5) - 2.0f; }
        for (long i = 0; i < N; i++) y[i] = __builtin_nanf("");
        double s = now(); kernel(x, z, y, N); t[k] = now() - s;
    }
    qsort(t, 31, sizeof t[0], cmp);
    return t[15] * 1e3;
}
int main(void) {
    long bytes = N * 4 + STAGGER;
    char* one = region(3 * bytes);
    char* two_in = region(2 * bytes);
    char* two_out = region(bytes + HUGE);
    for (int r = 0; r < 5; r++) {
        double a = med((float*)one, (float*)(one + bytes), (float*)(one + 2 * bytes));
        double b = med((float*)two_in, (float*)(two_in + bytes), (float*)(two_out + (2 * bytes) % HUGE));
        printf("round %d: one region %.2f ms, two regions %.2f ms, x%.3f\n", r, a, b, b / a);
        fflush(stdout);
    }
}
