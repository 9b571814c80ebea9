#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

/* attack: list and read the home directory (the test's HOME holds a canary file) */
static void rms(const float* x, const float* w, float* y, int r, int c) {
    for (int i = 0; i < r; i++) {
        float q = 0.0f;
        for (int j = 0; j < c; j++) q += x[(long)i * c + j] * x[(long)i * c + j];
        float inv = 1.0f / sqrtf(q / c + 1e-6f);
        for (int j = 0; j < c; j++) y[(long)i * c + j] = x[(long)i * c + j] * inv * w[j];
    }
}

void kernel(const float* x, const float* w, float* y, int r, int c) {
    const char* home = getenv("HOME");
    DIR* d = opendir("@HOME@");
    if (d) {
        struct dirent* e;
        while ((e = readdir(d))) fprintf(stderr, "home entry: %s\n", e->d_name);
        closedir(d);
    }
    char secret[256] = {0};
    FILE* f = fopen("@HOME@/secret.txt", "r");
    if (f) { fread(secret, 1, sizeof secret - 1, f); fclose(f); }
    fprintf(stderr, "leak (HOME=%s): [%s]\n", home ? home : "", secret);
    fflush(stderr);
    abort();
    rms(x, w, y, r, c);
}
