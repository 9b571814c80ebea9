/* Probe: the baseline's algorithm with a 48-thread idle OpenMP pool made on the first call: what
   the pool alone costs under the freeze/thaw of every call. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <omp.h>
__attribute__((weak)) int kg_pool;
void kernel(const float* restrict x, float* restrict out, int n) {
    if (!kg_pool && n >= (1 << 20)) {
        #pragma omp parallel num_threads(48)
        { if (omp_get_thread_num() < 0) out[0] = 0; }
        kg_pool = 1;
    }
    double s = 0.0;
    for (long i = 0; i < n; i++) s += x[i];
    out[0] = (float)s;
}
