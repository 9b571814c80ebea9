/* Stop 64: matmul best-A's kernel (k.c) called CALLS times in one process, with nothing of the evaluator
   around it: its inputs and output malloc'd, one warm-up call, then the median per-call time (ns) and the
   process's uid. uid_probe.py runs it as root and as another uid, alternately. */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>
void kernel(const float *a, const float *b, float *c, int n);
static int cmp(const void *x, const void *y) { long d = *(const long *)x - *(const long *)y; return (d > 0) - (d < 0); }
int main(int argc, char **argv) {
    int n = atoi(argv[1]), calls = atoi(argv[2]);
    float *a = malloc(sizeof(float) * n * n), *b = malloc(sizeof(float) * n * n), *c = malloc(sizeof(float) * n * n);
    for (long i = 0; i < (long)n * n; i++) { a[i] = (float)(i % 7) / 7; b[i] = (float)(i % 5) / 5; }
    long *t = malloc(sizeof(long) * calls);
    kernel(a, b, c, n);
    for (int i = 0; i < calls; i++) {
        struct timespec s, e;
        clock_gettime(CLOCK_MONOTONIC, &s); kernel(a, b, c, n); clock_gettime(CLOCK_MONOTONIC, &e);
        t[i] = (e.tv_sec - s.tv_sec) * 1000000000L + (e.tv_nsec - s.tv_nsec);
    }
    qsort(t, calls, sizeof(long), cmp);
    printf("%ld %d\n", t[calls / 2], (int)getuid());
    return 0;
}
