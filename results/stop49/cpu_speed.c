/* Each CPU's speed over time: a fixed integer loop timed on CPU 0 and on CPU 1 in turn, every 50 ms,
   for SECONDS (argv[1]); prints one line per second with the least and most loop time on each CPU. */
#define _GNU_SOURCE
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>
static double now(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec + t.tv_nsec * 1e-9; }
static double spin(int cpu) {
    cpu_set_t s; CPU_ZERO(&s); CPU_SET(cpu, &s); sched_setaffinity(0, sizeof s, &s);
    volatile unsigned long x = 1; double t0 = now();
    for (long i = 0; i < 2000000; i++) x = x * 6364136223846793005UL + 1442695040888963407UL;
    return (now() - t0) * 1e6;
}
int main(int argc, char **argv) {
    int seconds = argc > 1 ? atoi(argv[1]) : 30;
    for (int s = 0; s < seconds; s++) {
        double lo[2] = {1e9, 1e9}, hi[2] = {0, 0};
        for (int k = 0; k < 20; k++) {
            for (int c = 0; c < 2; c++) { double us = spin(c); if (us < lo[c]) lo[c] = us; if (us > hi[c]) hi[c] = us; }
            usleep(50000);
        }
        printf("%3d s  cpu0 %7.0f-%7.0f us  cpu1 %7.0f-%7.0f us  ratio of least %.3f\n", s, lo[0], hi[0], lo[1], hi[1], lo[1] / lo[0]);
        fflush(stdout);
    }
    return 0;
}
