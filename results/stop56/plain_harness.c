/* A plain C timing harness, for triangulating the two protocols (results/stop56/triangulate.py): no
   sandbox, no Python, no evaluator between calls. It maps the inputs (one 2 MiB-aligned buffer laid out
   by `buffer_layout`, huge pages advised) and the outputs (another), and per call writes a fresh variant
   of each float input (base x factors[call..], as `write_variant`), fills the outputs with what no right
   answer is, and calls the kernel, timed by this thread's CPU clock and the wall clock.
   argv: kernel.so DATA_FILE WARMUP CALLS INPUT_BYTES OUTPUT_BYTES SIZES(a,b,..) then one spec per
   array, "i:OFFSET:NBYTES:KIND" or "o:OFFSET:NBYTES:KIND", KIND f (float32) or s (int32) or l (int64);
   DATA_FILE holds each input's base bytes in order, then the float32 factors.
   Two calls per variant, as the protocols' pair; with FLUSH set, both buffers are flushed from the caches before each call; prints per timed call: turn cpu_ns wall_ns. */
#include <dlfcn.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <immintrin.h>

typedef void (*kernel_fn)(long, long, long, long, long, long, long, long, long, long, long, long, long,
                          long, long, long);
#define HUGE (2L << 20)

static void *aligned_map(long bytes) {
    long size = (bytes + 2 * HUGE) / HUGE * HUGE;
    char *p = mmap(NULL, size + HUGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) { perror("mmap"); exit(1); }
    char *a = (char *)(((uintptr_t)p + HUGE - 1) / HUGE * HUGE);
    madvise(a, size, MADV_HUGEPAGE);
    memset(a, 0, size);
    return a;
}

static void flush(const char *p, long n) {
    for (long i = 0; i < n; i += 64) _mm_clflushopt((void *)(p + i));
    _mm_sfence();
}

static long ns(clockid_t id) {
    struct timespec t;
    clock_gettime(id, &t);
    return t.tv_sec * 1000000000L + t.tv_nsec;
}

int main(int argc, char **argv) {
    if (argc < 9) { fprintf(stderr, "usage: see the comment\n"); return 2; }
    void *so = dlopen(argv[1], RTLD_NOW);
    if (!so) { fprintf(stderr, "%s\n", dlerror()); return 1; }
    kernel_fn kernel = (kernel_fn)dlsym(so, "kernel");
    FILE *data = fopen(argv[2], "rb");
    int warmup = atoi(argv[3]), calls = atoi(argv[4]);
    char *in = aligned_map(atol(argv[5])), *out = aligned_map(atol(argv[6]));
    long sizes[8]; int nsizes = 0;
    for (char *s = strtok(argv[7], ","); s && nsizes < 8; s = strtok(NULL, ",")) sizes[nsizes++] = atol(s);
    int n = argc - 8;
    char kind[16], role[16]; long offset[16], nbytes[16]; void *base[16];
    long most_floats = 0;
    for (int k = 0; k < n; k++) {
        sscanf(argv[8 + k], "%c:%ld:%ld:%c", &role[k], &offset[k], &nbytes[k], &kind[k]);
        if (role[k] == 'i') {
            base[k] = malloc(nbytes[k]);
            if (fread(base[k], 1, nbytes[k], data) != (size_t)nbytes[k]) { fprintf(stderr, "short data\n"); return 1; }
            if (kind[k] == 'f' && nbytes[k] / 4 > most_floats) most_floats = nbytes[k] / 4;
        }
    }
    long nfactors = most_floats + warmup + calls;
    float *factors = malloc(nfactors * 4);
    if (fread(factors, 4, nfactors, data) != (size_t)nfactors) { fprintf(stderr, "short factors\n"); return 1; }
    long args[16] = {0}; int a = 0;
    for (int k = 0; k < n; k++) args[a++] = (long)((role[k] == 'i' ? in : out) + offset[k]);
    for (int k = 0; k < nsizes; k++) args[a++] = sizes[k];
    for (int call = 0; call < warmup + calls; call++) {
        for (int k = 0; k < n; k++) {
            if (role[k] != 'i') continue;
            char *p = in + offset[k];
            if (kind[k] == 'f') {
                float *d = (float *)p, *b = base[k], *f = factors + call;
                for (long e = 0; e < nbytes[k] / 4; e++) d[e] = b[e] * f[e];
            } else memcpy(p, base[k], nbytes[k]);
        }
        for (int turn = 0; turn < 2; turn++) { /* as the protocols' pair: two calls on one variant */
            for (int k = 0; k < n; k++) {
                if (role[k] != 'o') continue;
                char *p = out + offset[k];
                if (kind[k] == 'f') {
                    float *d = (float *)p; for (long e = 0; e < nbytes[k] / 4; e++) d[e] = NAN;
                } else if (kind[k] == 's') {
                    int32_t *d = (int32_t *)p; for (long e = 0; e < nbytes[k] / 4; e++) d[e] = INT32_MIN;
                } else {
                    int64_t *d = (int64_t *)p; for (long e = 0; e < nbytes[k] / 8; e++) d[e] = INT64_MIN;
                }
            }
            if (getenv("FLUSH")) { flush(in, atol(argv[5])); flush(out, atol(argv[6])); }
            long c0 = ns(CLOCK_THREAD_CPUTIME_ID), w0 = ns(CLOCK_MONOTONIC);
            kernel(args[0], args[1], args[2], args[3], args[4], args[5], args[6], args[7], args[8], args[9],
                   args[10], args[11], args[12], args[13], args[14], args[15]);
            long c1 = ns(CLOCK_THREAD_CPUTIME_ID), w1 = ns(CLOCK_MONOTONIC);
            if (call >= warmup) printf("%d %ld %ld\n", turn, c1 - c0, w1 - w0);
        }
    }
    return 0;
}
