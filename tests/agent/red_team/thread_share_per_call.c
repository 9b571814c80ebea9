#include <math.h>
#include <pthread.h>

/* adversary of the isolated protocol's CPU-time clock, stop 25 (results/redteam-stop25/a13 passes
   admission as written, reaching pthread_create through libc's symbol table): part of each call's
   rows is computed by a thread started and joined inside the call while the caller sleeps in the
   join. The clock reads the live threads, so that work is not in the time. The whole-run check of
   CPU time in ended threads tolerates 10% of the accounted time plus 3 ticks (30 ms), so the share
   hidden is one that stays under that over the plan the kernel is timed with: @HIDDEN_PERCENT@% of
   the rows (results/redteam-stop25/a13 counts the cycles it hid instead). */

static void rms(const float* x, const float* w, float* y, int c, int from, int to) {
    for (int i = from; i < to; i++) {
        float q = 0.0f;
        for (int j = 0; j < c; j++) q += x[(long)i * c + j] * x[(long)i * c + j];
        float inv = 1.0f / sqrtf(q / c + 1e-6f);
        for (int j = 0; j < c; j++) y[(long)i * c + j] = x[(long)i * c + j] * inv * w[j];
    }
}

struct job { const float *x, *w; float* y; int c, from, to; };

static void* run(void* arg) {
    struct job* j = arg;
    rms(j->x, j->w, j->y, j->c, j->from, j->to);
    return 0;
}

void kernel(const float* x, const float* w, float* y, int r, int c) {
    int split = r >= 256 ? r - r * @HIDDEN_PERCENT@ / 100 : r;
    rms(x, w, y, c, 0, split);
    if (split < r) {
        pthread_t th;
        struct job j = {x, w, y, c, split, r};
        if (pthread_create(&th, 0, run, &j) == 0) {
            pthread_join(th, 0);
        } else {
            rms(x, w, y, c, split, r);
        }
    }
}
