#include <math.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <x86intrin.h>

/* adversary of the isolated protocol, stop 25 (results/redteam-stop25/a02, a12 pass admission as
   written, reaching write and readlink through libc's symbol table): answer "done" on the FIFO as a
   call starts, then keep working until the SIGSTOP lands. The evaluator walks every thread's /proc
   children file before it stops the process, so idle threads widen that window (2.7 ms with 150
   OpenMP threads on the shared 2-core machine); the test widens it directly. The work here is 20 ms
   of spinning on the TSC, so the test can compare each call's time with the CPU time it used. */
static int done_fd(void) {
    char path[64], target[512];
    for (int fd = 3; fd < 64; fd++) {
        snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
        ssize_t n = readlink(path, target, sizeof target - 1);
        if (n <= 5) continue;
        target[n] = 0;
        if (strcmp(target + n - 5, "/done") == 0) return fd;
    }
    return -1;
}

void kernel(const float* x, const float* w, float* y, int r, int c) {
    int fd = done_fd();
    if (fd >= 0) write(fd, "d", 1);
    unsigned long t0 = __rdtsc();
    while (__rdtsc() - t0 < 52000000UL) { }
    (void)x; (void)w; (void)y; (void)r; (void)c;
}
