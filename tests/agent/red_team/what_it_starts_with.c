/* What a timed process is handed as it starts, read with no system call but one: the auxiliary
   vector (found after the environment's end: AT_UID and the other credentials, addresses, the
   page size, ...) and the CPUs it may run on (sched_getaffinity, allowed). The seventeenth
   adversary read its uid there, and the uid counted the evaluator's steps, so it was a clock
   (results/redteam-stop55). y, as 64-bit words: the number of pairs, the pairs (key, value), then
   the first word of the CPU mask. Read by test_nothing_a_timed_kernel_starts_with_counts_the_steps
   (admission skipped: it names environ and calls sched_getaffinity, which a kernel reaches by
   address anyway). */
#define _GNU_SOURCE
#include <sched.h>
#include <stdint.h>
#include <string.h>

extern char **environ;

void kernel(const float *x, const float *w, float *y, int r, int c) {
    (void)x;
    (void)w;
    uint64_t words[2 + 2 * 64];
    char **end = environ;
    while (*end) end++;
    const uint64_t *aux = (const uint64_t *)(end + 1);
    uint64_t pairs = 0;
    while (pairs < 64 && aux[2 * pairs] != 0) {
        words[1 + 2 * pairs] = aux[2 * pairs];
        words[2 + 2 * pairs] = aux[2 * pairs + 1];
        pairs++;
    }
    words[0] = pairs;
    cpu_set_t cpus;
    CPU_ZERO(&cpus);
    sched_getaffinity(0, sizeof cpus, &cpus);
    memcpy(&words[1 + 2 * pairs], &cpus, sizeof(uint64_t));
    size_t bytes = (2 + 2 * pairs) * sizeof(uint64_t);
    if ((size_t)r * (size_t)c * sizeof(float) >= bytes) memcpy(y, words, bytes);
}
