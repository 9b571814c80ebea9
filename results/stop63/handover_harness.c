/* Stop 63's bisect of matmul best-A's isolated excess (results/stop63/handover_probe.py drives it).
   results/stop56/plain_harness.c's kernel call and cold state, on the isolated protocol's buffers (two
   files on a huge=within_size tmpfs, mapped MAP_SHARED as serve_loop.c maps them), with two switches:
   - HANDOVER=none: the harness loops by itself (the plain harness); HANDOVER=fifo: before each call it
     reads one byte from the `go` FIFO and after it writes 'd' to `done`, as serve_loop.c does (the
     driver may stop and continue it between calls, SIGSTOP/SIGCONT, as the evaluator freezes the tree);
   - WRITER=self: the harness writes each variant, poisons the outputs and flushes both buffers before a
     call, as plain_harness.c with FLUSH; WRITER=driver: the driver process does all of it, as the
     evaluator does (the inputs then mapped read-only here).
   argv: kernel.so INPUT_FILE OUTPUT_FILE DATA_FILE GO DONE WARMUP CALLS INPUT_BYTES OUTPUT_BYTES
         SIZES(a,b,..) then one spec per array "i:OFFSET:NBYTES:KIND" or "o:OFFSET:NBYTES:KIND"
         (KIND f, s or l); DATA_FILE holds each input's base bytes, then the float32 factors.
   Prints per timed call: turn cpu_ns wall_ns (the kernel call alone, this thread's clocks). */
#include <dlfcn.h>
#include <fcntl.h>
#include <immintrin.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

typedef void (*kernel_fn)(long, long, long, long, long, long, long, long, long, long, long, long, long,
                          long, long, long);

static char *map_file(const char *path, int writable) {
    int fd = open(path, writable ? O_RDWR : O_RDONLY);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0) { perror(path); exit(1); }
    char *p = mmap(NULL, st.st_size, PROT_READ | (writable ? PROT_WRITE : 0), MAP_SHARED, fd, 0);
    if (p == MAP_FAILED) { perror("mmap"); exit(1); }
    close(fd);
    return p;
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
    if (argc < 12) { fprintf(stderr, "usage: see the comment\n"); return 2; }
    int fifo = strcmp(getenv("HANDOVER"), "fifo") == 0, self = strcmp(getenv("WRITER"), "self") == 0;
    void *so = dlopen(argv[1], RTLD_NOW);
    if (!so) { fprintf(stderr, "%s\n", dlerror()); return 1; }
    kernel_fn kernel = (kernel_fn)dlsym(so, "kernel");
    char *in = map_file(argv[2], self), *out = map_file(argv[3], 1);
    FILE *data = fopen(argv[4], "rb");
    int go = fifo ? open(argv[5], O_RDONLY) : -1, done = fifo ? open(argv[6], O_WRONLY) : -1;
    int warmup = atoi(argv[7]), calls = atoi(argv[8]);
    long in_bytes = atol(argv[9]), out_bytes = atol(argv[10]);
    long sizes[8]; int nsizes = 0;
    for (char *s = strtok(argv[11], ","); s && nsizes < 8; s = strtok(NULL, ",")) sizes[nsizes++] = atol(s);
    int n = argc - 12;
    char kind[16], role[16]; long offset[16], nbytes[16]; void *base[16];
    long most_floats = 0;
    for (int k = 0; k < n; k++) {
        sscanf(argv[12 + k], "%c:%ld:%ld:%c", &role[k], &offset[k], &nbytes[k], &kind[k]);
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
    long *times = calloc(2 * 3 * (warmup + calls), sizeof(long));
    int timed = 0;
    for (int call = 0; call < warmup + calls; call++) {
        for (int turn = 0; turn < 2; turn++) { /* as the protocols' pair: two calls on one variant */
            if (fifo) { char c; if (read(go, &c, 1) != 1) return 1; }
            if (self) {
                for (int k = 0; k < n && turn == 0; k++) {
                    if (role[k] != 'i') continue;
                    char *p = in + offset[k];
                    if (kind[k] == 'f') {
                        float *d = (float *)p, *b = base[k], *f = factors + call;
                        for (long e = 0; e < nbytes[k] / 4; e++) d[e] = b[e] * f[e];
                    } else memcpy(p, base[k], nbytes[k]);
                }
                for (int k = 0; k < n; k++) {
                    if (role[k] != 'o') continue;
                    char *p = out + offset[k];
                    if (kind[k] == 'f') { float *d = (float *)p; for (long e = 0; e < nbytes[k] / 4; e++) d[e] = NAN; }
                    else if (kind[k] == 's') { int32_t *d = (int32_t *)p; for (long e = 0; e < nbytes[k] / 4; e++) d[e] = INT32_MIN; }
                    else { int64_t *d = (int64_t *)p; for (long e = 0; e < nbytes[k] / 8; e++) d[e] = INT64_MIN; }
                }
                flush(in, in_bytes);
                flush(out, out_bytes);
            }
            long c0 = ns(CLOCK_THREAD_CPUTIME_ID), w0 = ns(CLOCK_MONOTONIC);
            kernel(args[0], args[1], args[2], args[3], args[4], args[5], args[6], args[7], args[8], args[9],
                   args[10], args[11], args[12], args[13], args[14], args[15]);
            long c1 = ns(CLOCK_THREAD_CPUTIME_ID), w1 = ns(CLOCK_MONOTONIC);
            if (call >= warmup) { times[3 * timed] = turn; times[3 * timed + 1] = c1 - c0; times[3 * timed + 2] = w1 - w0; timed++; }
            if (fifo && write(done, "d", 1) != 1) return 1;
        }
    }
    for (int i = 0; i < timed; i++) printf("%ld %ld %ld\n", times[3 * i], times[3 * i + 1], times[3 * i + 2]);
    return 0;
}
