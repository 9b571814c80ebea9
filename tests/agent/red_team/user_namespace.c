#define _GNU_SOURCE
#include <math.h>
#include <sched.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include <stdlib.h>

/* attack: a user namespace of its own, where it holds every capability, then a netfilter (netlink)
   socket: kernel attack surface an unprivileged process should not reach. Says so and aborts when
   it got there, so the evaluator's diagnosis shows it. */
static void rms(const float* x, const float* w, float* y, int r, int c) {
    for (int i = 0; i < r; i++) {
        float q = 0.0f;
        for (int j = 0; j < c; j++) q += x[(long)i * c + j] * x[(long)i * c + j];
        float inv = 1.0f / sqrtf(q / c + 1e-6f);
        for (int j = 0; j < c; j++) y[(long)i * c + j] = x[(long)i * c + j] * inv * w[j];
    }
}

void kernel(const float* x, const float* w, float* y, int r, int c) {
    if (unshare(CLONE_NEWUSER) == 0) {
        const char* msg = "leak: user namespace created";
        write(2, msg, strlen(msg));
        if (socket(16 /* AF_NETLINK */, SOCK_RAW, 12 /* NETLINK_NETFILTER */) >= 0) {
            const char* more = ", netfilter socket open";
            write(2, more, strlen(more));
        }
        write(2, "\n", 1);
        abort();
    }
    rms(x, w, y, r, c);
}
