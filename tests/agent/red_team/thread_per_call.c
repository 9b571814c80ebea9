#include <math.h>
#include <pthread.h>

/* adversary of the isolated protocol's CPU-time clock: do every call's work in threads started and
   ended within the call, so that no reading of the live threads' CPU time ever sees it (the main
   thread only waits); the time would be near zero. */
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
    pthread_t t[2];
    struct job jobs[2] = {{x, w, y, c, 0, r / 2}, {x, w, y, c, r / 2, r}};
    for (int i = 0; i < 2; i++) pthread_create(&t[i], 0, run, &jobs[i]);
    for (int i = 0; i < 2; i++) pthread_join(t[i], 0);
}
