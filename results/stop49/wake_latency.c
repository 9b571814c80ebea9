/* How long a thread blocked on CPU 1 takes to run once woken from CPU 0, after CPU 1 was idle for
   IDLE ms (CPU 0 busy meanwhile, as during a serial partner's call). Prints median, 90th percentile and
   most, in us, over 60 wakes per idle time. */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>
static int fds[2], back[2];
static double now(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec * 1e6 + t.tv_nsec * 1e-3; }
static void pin(int cpu) { cpu_set_t s; CPU_ZERO(&s); CPU_SET(cpu, &s); sched_setaffinity(0, sizeof s, &s); }
static void *worker(void *arg) {
    (void)arg; pin(1);
    double sent;
    while (read(fds[0], &sent, sizeof sent) == sizeof sent) { double lat = now() - sent; write(back[1], &lat, sizeof lat); }
    return NULL;
}
static int cmp(const void *a, const void *b) { double x = *(const double *)a, y = *(const double *)b; return (x > y) - (x < y); }
int main(void) {
    pipe(fds); pipe(back); pin(0);
    pthread_t t; pthread_create(&t, NULL, worker, NULL); usleep(10000);
    double idles[] = {0.05, 1, 5, 20};
    for (int k = 0; k < 4; k++) {
        double lat[60];
        for (int i = 0; i < 60; i++) {
            double until = now() + idles[k] * 1000; while (now() < until) {}
            double ts = now(); write(fds[1], &ts, sizeof ts); read(back[0], &lat[i], sizeof lat[i]);
        }
        qsort(lat, 60, sizeof lat[0], cmp);
        printf("CPU 1 idle %5.2f ms: wake latency median %7.1f us  p90 %7.1f  most %7.1f\n", idles[k], lat[30], lat[54], lat[59]);
    }
    return 0;
}
