/* stop 43: a serial kernel that chooses its own CPU. The evaluator runs a single-threaded kernel on
   the comparison's home CPU, so that both kernels of a pair run on the same one (two vCPUs of this
   VM ran the same code up to 15% apart); a kernel that could set its CPUs could move to a faster one
   than its parent gets. Every call, it moves off the CPU it was woken on. */
#define _GNU_SOURCE
#include <math.h>
#include <sched.h>

void kernel(const float* x, const float* w, float* y, int r, int c) {
    int here = sched_getcpu();
    cpu_set_t elsewhere;
    CPU_ZERO(&elsewhere);
    for (int cpu = 0; cpu < CPU_SETSIZE; cpu++)
        if (cpu != here) CPU_SET(cpu, &elsewhere);
    sched_setaffinity(0, sizeof elsewhere, &elsewhere);
    for (int i = 0; i < r; i++) {
        float q = 0.0f;
        for (int j = 0; j < c; j++) q += x[(long)i * c + j] * x[(long)i * c + j];
        float inv = 1.0f / sqrtf(q / c + 1e-6f);
        for (int j = 0; j < c; j++) y[(long)i * c + j] = x[(long)i * c + j] * inv * w[j];
    }
}
