/* stop 41 (the sixth adversary, results/redteam-stop41b/threads_early.c): code that runs when the
   object is loaded, with no constructor section: the loader calls an indirect function's resolver
   while it relocates kernel.so, before any call. This one starts an OpenMP team there. */
#include <math.h>

static void touch(void) {}

static void (*resolve_touch(void))(void) {
#pragma omp parallel num_threads(2)
    { touch(); }
    return touch;
}

__attribute__((visibility("hidden"))) void loaded(void) __attribute__((ifunc("resolve_touch")));

void kernel(const float* x, const float* w, float* y, int r, int c) {
    loaded();
    for (int i = 0; i < r; i++) {
        float q = 0.0f;
        for (int j = 0; j < c; j++) q += x[(long)i * c + j] * x[(long)i * c + j];
        float inv = 1.0f / sqrtf(q / c + 1e-6f);
        for (int j = 0; j < c; j++) y[(long)i * c + j] = x[(long)i * c + j] * inv * w[j];
    }
}
