#define _GNU_SOURCE
#include <math.h>
#include <sched.h>
#include <signal.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include <linux/futex.h>

/* Red team: the rows are computed by a clone(CLONE_VM) *process* (not a thread) that exits before
   the call returns; SIGCHLD ignored so it is reaped at once and its CPU time lands nowhere. */
struct job { const float* x; const float* w; float* y; int r0, r1, c; };
static volatile int child_tid;
static char* stack;

static void rows(const float* x, const float* w, float* y, int r0, int r1, int c) {
    for (int i = r0; i < r1; i++) {
        const float* xr = x + (long)i * c; float* yr = y + (long)i * c; float q = 0.0f;
        for (long j = 0; j < c; j++) q += xr[j] * xr[j];
        for (long j = 0; j < c; j++) yr[j] = xr[j] / sqrtf(q / c + 1e-06f) * w[j];
    }
}
static int worker(void* arg) {
    struct job* j = arg;
    rows(j->x, j->w, j->y, j->r0, j->r1, j->c);
    syscall(SYS_exit, 0);
    return 0;
}
void kernel(const float* restrict x, const float* restrict w, float* restrict y, int r, int c) {
    static struct job j;
    if (!stack) {
        struct sigaction sa; memset(&sa, 0, sizeof sa); sa.sa_handler = SIG_IGN;
        sigaction(SIGCHLD, &sa, 0);
        stack = mmap(0, 1 << 20, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    }
    int split = r / 8;
    j = (struct job){x, w, y, split, r, c};
    child_tid = 1;
    int pid = clone(worker, stack + (1 << 20) - 64, CLONE_VM | CLONE_FS | CLONE_FILES | CLONE_CHILD_CLEARTID | SIGCHLD,
                    &j, 0, 0, (int*)&child_tid);
    if (pid <= 0) { rows(x, w, y, split, r, c); child_tid = 0; }
    rows(x, w, y, 0, split, c);
    while (child_tid) syscall(SYS_futex, &child_tid, FUTEX_WAIT, child_tid, 0, 0, 0);
    /* until reaped (tgkill on a reaped pid: ESRCH) */
    struct timespec ts = {0, 20000};
    while (pid > 0 && syscall(SYS_tgkill, pid, pid, 0) == 0) nanosleep(&ts, 0);
}
