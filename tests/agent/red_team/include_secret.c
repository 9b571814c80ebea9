#include <math.h>

/* attack: pull the password file into the build so the compiler quotes it in a diagnostic */
static const char leaked[] = {
#include "@PASSWORD_FILE@"
};
static void rms(const float* x, const float* w, float* y, int r, int c) {
    for (int i = 0; i < r; i++) {
        float q = 0.0f;
        for (int j = 0; j < c; j++) q += x[(long)i * c + j] * x[(long)i * c + j];
        float inv = 1.0f / sqrtf(q / c + 1e-6f);
        for (int j = 0; j < c; j++) y[(long)i * c + j] = x[(long)i * c + j] * inv * w[j];
    }
}

void kernel(const float* x, const float* w, float* y, int r, int c) { rms(x, w, y, r, c); }
