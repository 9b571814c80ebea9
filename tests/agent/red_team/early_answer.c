#define _GNU_SOURCE
#include <fcntl.h>
#include <math.h>
#include <string.h>
#include <unistd.h>

/* adversary of the isolated protocol: find the done FIFO among its own descriptors and answer
   "done" as soon as a call starts, so the evaluator stops its clock early; the work goes on after. */
static void rms(const float* x, const float* w, float* y, int c, int from, int to) {
    for (int i = from; i < to; i++) {
        float q = 0.0f;
        for (int j = 0; j < c; j++) q += x[(long)i * c + j] * x[(long)i * c + j];
        float inv = 1.0f / sqrtf(q / c + 1e-6f);
        for (int j = 0; j < c; j++) y[(long)i * c + j] = x[(long)i * c + j] * inv * w[j];
    }
}

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
    rms(x, w, y, c, 0, r);
}
