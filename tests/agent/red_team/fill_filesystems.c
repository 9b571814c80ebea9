#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* attack: fill the sandbox's /tmp (host memory) and its scratch directory (the host's disk) with
   @FILL_MIB@ MiB each, then report how much each took, and abort so the report shows. */
static long fill(const char* path) {
    static const char block[1 << 20];  /* zeros */
    FILE* f = fopen(path, "wb");
    long mib = 0;
    if (!f) return -1;
    while (mib < @FILL_MIB@ && fwrite(block, 1, sizeof block, f) == sizeof block && fflush(f) == 0) mib++;
    fclose(f);
    fclose(fopen(path, "wb"));  /* truncated again, so that the report below can be written */
    return mib;
}

void kernel(const float* x, const float* w, float* y, int r, int c) {
    (void)x; (void)w; (void)y; (void)r; (void)c;
    fprintf(stderr, "leak: tmp=%ld scratch=%ld MiB\n", fill("/tmp/fill"), fill("fill"));
    abort();
}
