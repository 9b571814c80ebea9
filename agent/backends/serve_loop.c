/* The isolated protocol's side of a call, in C (agent/backends/_child.py `_serve` runs it; the
   evaluator builds it, agent/backends/isolated.py `serve_loop`). A kernel that never returns and
   serves the FIFOs itself must find no loop here slower than its own: in Python, the loop ran
   cache-cold after a large kernel and such a kernel saved 71-114 us a call (results/redteam-stop26).

   kg_serve reads one command byte at a time from `go`:
   - `expect` 'n' (before the kernel is loaded): each 'n' runs the serial stand-in (read `nbytes` of
     the shared buffers into `copy`, stay on the CPU until `spin_ns` have passed), each 'p' the
     parallel one (the same work split over `threads` threads, all on the CPU until the answer, as a
     parallel kernel is); either answers 'd', the CPU time all its threads spent and the wall time
     it took (8 bytes each, little-endian, in the same write);
   - `expect` 'c': each 'c' calls `fn` with `args` and answers 'd'.
   Any other byte ends the loop and is returned (the next command); -1 when `go` is closed. */
#include <pthread.h>
#include <stdint.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define KG_MAX_ARGS 16

typedef void (*kg_kernel)(long, long, long, long, long, long, long, long, long, long, long, long, long,
                          long, long, long);

static int64_t kg_clock(clockid_t id) {
    struct timespec t;
    clock_gettime(id, &t);
    return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

#define KG_MAX_THREADS 64

struct kg_share {
    const char *src;
    char *copy;
    long nbytes;
    int64_t end; /* CLOCK_MONOTONIC */
    int64_t cpu; /* out: the CPU time this thread spent */
};

/* Each thread reads its own CPU clock: the process's is sampled at scheduler ticks while a CPU-time
   limit is set (RLIMIT_CPU arms its timer), so it lags for threads that are running. */
static void *kg_stand_in(void *arg) {
    struct kg_share *share = arg;
    int64_t cpu = kg_clock(CLOCK_THREAD_CPUTIME_ID);
    memmove(share->copy, share->src, (size_t)share->nbytes);
    while (kg_clock(CLOCK_MONOTONIC) < share->end) {
    }
    share->cpu = kg_clock(CLOCK_THREAD_CPUTIME_ID) - cpu;
    return NULL;
}

/* The stand-in on `threads` threads: each its slice of the copy, all until `spin_ns` have passed. */
static void kg_stand_ins(const char *src, long nbytes, char *copy, long spin_ns, long threads, int64_t *cpu,
                         int64_t *wall) {
    pthread_t helper[KG_MAX_THREADS];
    struct kg_share share[KG_MAX_THREADS];
    int64_t start = kg_clock(CLOCK_MONOTONIC);
    long n = threads < 1 ? 1 : threads > KG_MAX_THREADS ? KG_MAX_THREADS : threads, slice = nbytes / n, started = 0;
    for (long t = 0; t < n; t++) {
        long from = t * slice, len = t == n - 1 ? nbytes - from : slice;
        share[t] = (struct kg_share){src + from, copy + from, len, start + spin_ns, 0};
    }
    for (long t = 1; t < n; t++) {
        if (pthread_create(&helper[t], NULL, kg_stand_in, &share[t]) != 0) break;
        started = t;
    }
    kg_stand_in(&share[0]);
    for (long t = 1; t <= started; t++) pthread_join(helper[t], NULL);
    for (long t = started + 1; t < n; t++) kg_stand_in(&share[t]); /* a thread that could not start */
    *wall = kg_clock(CLOCK_MONOTONIC) - start;
    *cpu = 0;
    for (long t = 0; t < n; t++) *cpu += share[t].cpu;
}

int kg_serve(int go, int done, void *fn, const long *args, char expect, const void *src, long nbytes,
             void *copy, long spin_ns, long threads) {
    /* Every argument of a kernel is a pointer or an int: in the x86-64 and AArch64 calling
       conventions each takes one integer register or stack slot, so passing all as long works for
       any count up to KG_MAX_ARGS (the callee reads the ones it declares). */
    kg_kernel kernel = (kg_kernel)fn;
    char command;
    for (;;) {
        if (read(go, &command, 1) != 1) return -1;
        if (expect == 'n' && (command == 'n' || command == 'p')) {
            int64_t cpu, wall;
            kg_stand_ins(src, nbytes, copy, spin_ns, command == 'p' ? threads : 1, &cpu, &wall);
            char answer[17];
            answer[0] = 'd';
            memcpy(answer + 1, &cpu, 8);
            memcpy(answer + 9, &wall, 8);
            if (write(done, answer, 17) != 17) return -1;
        } else if (command != expect) {
            return (unsigned char)command;
        } else {
            kernel(args[0], args[1], args[2], args[3], args[4], args[5], args[6], args[7], args[8], args[9],
                   args[10], args[11], args[12], args[13], args[14], args[15]);
            if (write(done, "d", 1) != 1) return -1;
        }
    }
}
