/* The isolated protocol's side of a call, in C (agent/backends/_child.py `_serve` runs it; the
   evaluator builds it, agent/backends/isolated.py `serve_loop`). A kernel that never returns and
   serves the FIFOs itself must find no loop here slower than its own: in Python, the loop ran
   cache-cold after a large kernel and such a kernel saved 71-114 us a call (results/redteam-stop26).

   kg_serve reads one command byte at a time from `go`:
   - `expect` 'n' (before the kernel is loaded): each 'n' runs the stand-in (read `nbytes` of the
     shared buffers into `copy`, stay on the CPU until `spin_ns` have passed) and answers 'd' and the
     CPU time it spent (8 bytes, little-endian, in the same write);
   - `expect` 'c': each 'c' calls `fn` with `args` and answers 'd'.
   Any other byte ends the loop and is returned (the next command); -1 when `go` is closed. */
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

int kg_serve(int go, int done, void *fn, const long *args, char expect, const void *src, long nbytes,
             void *copy, long spin_ns) {
    /* Every argument of a kernel is a pointer or an int: in the x86-64 and AArch64 calling
       conventions each takes one integer register or stack slot, so passing all as long works for
       any count up to KG_MAX_ARGS (the callee reads the ones it declares). */
    kg_kernel kernel = (kg_kernel)fn;
    char command;
    for (;;) {
        if (read(go, &command, 1) != 1) return -1;
        if (command != expect) return (unsigned char)command;
        if (expect == 'n') {
            int64_t cpu = kg_clock(CLOCK_THREAD_CPUTIME_ID);
            int64_t end = kg_clock(CLOCK_MONOTONIC) + spin_ns;
            memmove(copy, src, (size_t)nbytes);
            while (kg_clock(CLOCK_MONOTONIC) < end) {
            }
            int64_t spent = kg_clock(CLOCK_THREAD_CPUTIME_ID) - cpu;
            char answer[9];
            answer[0] = 'd';
            memcpy(answer + 1, &spent, 8);
            if (write(done, answer, 9) != 9) return -1;
        } else {
            kernel(args[0], args[1], args[2], args[3], args[4], args[5], args[6], args[7], args[8], args[9],
                   args[10], args[11], args[12], args[13], args[14], args[15]);
            if (write(done, "d", 1) != 1) return -1;
        }
    }
}
