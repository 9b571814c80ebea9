/* Offline probe (not a kernel): words of ld.so's writable/relro data that are a clock in microseconds. */
#include <stdio.h>
#include <stdint.h>
#include <string.h>
#include <time.h>
#include <sys/auxv.h>
int main(void) {
    struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t);
    uint64_t us = t.tv_sec * 1000000ull + t.tv_nsec / 1000;
    unsigned long base = getauxval(AT_BASE);
    FILE *f = fopen("/proc/self/maps", "r"); char line[512];
    while (fgets(line, sizeof line, f)) {
        unsigned long a, b; char perm[8];
        if (!strstr(line, "ld-linux")) continue;
        sscanf(line, "%lx-%lx %7s", &a, &b, perm);
        for (unsigned long p = a; p + 8 <= b; p += 8) {
            uint64_t v = *(uint64_t *)p;
            if (v <= us && us - v < 10000000ULL) printf("ldso+0x%lx: %lu (now_us-v=%lu) %s", p - base, v, us - v, line);
        }
    }
    return 0;
}
