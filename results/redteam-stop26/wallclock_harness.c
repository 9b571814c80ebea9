/* Wall-clock check outside the sandbox: dlopen each kernel .so given on the command line, call them
   interleaved (A B C, A B C, ...) on the same 8M-float input, print each one's median wall time and
   median process CPU time per call. Shows whether a "speedup" the isolated timer reports is real. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
typedef void (*kfn)(const float*, float*, int);
static double now(clockid_t c) { struct timespec t; clock_gettime(c, &t); return t.tv_sec * 1e9 + t.tv_nsec; }
static int cmp(const void* a, const void* b) { double d = *(const double*)a - *(const double*)b; return (d > 0) - (d < 0); }
int main(int argc, char** argv) {
    int n = 8 * 1024 * 1024, calls = 60, k = argc - 1;
    float* x = malloc(sizeof(float) * n); float out;
    for (int i = 0; i < n; i++) x[i] = (float)((i * 2654435761u) % 1000) / 1000.0f - 0.5f;
    kfn f[8]; double wall[8][60], cpu[8][60];
    for (int j = 0; j < k; j++) { void* h = dlopen(argv[j + 1], RTLD_NOW); if (!h) { puts(dlerror()); return 1; } f[j] = (kfn)dlsym(h, "kernel"); }
    for (int c = 0; c < calls + 5; c++)
        for (int j = 0; j < k; j++) {
            double w0 = now(CLOCK_MONOTONIC), c0 = now(CLOCK_PROCESS_CPUTIME_ID);
            f[j](x, &out, n);
            double w1 = now(CLOCK_MONOTONIC), c1 = now(CLOCK_PROCESS_CPUTIME_ID);
            if (c >= 5) { wall[j][c - 5] = w1 - w0; cpu[j][c - 5] = c1 - c0; }
        }
    for (int j = 0; j < k; j++) {
        qsort(wall[j], calls, sizeof(double), cmp); qsort(cpu[j], calls, sizeof(double), cmp);
        printf("%-45s wall median %.3f ms (q1 %.3f q3 %.3f)  cpu median %.3f ms\n", argv[j + 1],
               wall[j][calls / 2] / 1e6, wall[j][calls / 4] / 1e6, wall[j][3 * calls / 4] / 1e6, cpu[j][calls / 2] / 1e6);
    }
    return 0;
}
