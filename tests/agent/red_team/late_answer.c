#define _GNU_SOURCE
#include <fcntl.h>
#include <stdint.h>
#include <unistd.h>

/* adversary of the isolated protocol, stop 25 (results/redteam-stop25/a02, a12 pass admission as
   written, reaching write through libc's symbol table): answer "done" on the FIFO as a
   call starts, then keep working until the SIGSTOP lands. The evaluator walks every thread's /proc
   children file before it stops the process, so idle threads widen that window (2.7 ms with 150
   OpenMP threads on the shared 2-core machine); the test widens it directly. The work here is about
   17 ms of a dependent multiply chain (the TSC it spun on until stop 53 faults in a timed kernel),
   so the test can compare each call's time with the CPU time it used. */
/* The done FIFO among its own descriptors: the one pipe it may only write (fcntl, which the filters
   allow: no /proc, no fstat, which a timed kernel is refused, docs/sandbox.md). */
static int done_fd(void) {
    for (int fd = 3; fd < 64; fd++)
        if (fcntl(fd, F_GETPIPE_SZ) > 0 && (fcntl(fd, F_GETFL) & O_ACCMODE) == O_WRONLY) return fd;
    return -1;
}

void kernel(const float* x, const float* w, float* y, int r, int c) {
    int fd = done_fd();
    if (fd >= 0) write(fd, "d", 1);
    uint64_t h = 1;
    for (long i = 0; i < 15000000; i++) h = h * 6364136223846793005UL + 1442695040888963407UL;
    __asm__ volatile("" : : "r"(h));
    (void)x; (void)w; (void)y; (void)r; (void)c;
}
