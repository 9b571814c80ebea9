/* The reduction task's baseline (kernelgraph tasks show reduction), for the wall-clock harness. */
void kernel(const float* restrict x, float* restrict out, int n) {
    double s = 0.0;
    for (long i = 0; i < n; i++) s += x[i];
    out[0] = (float)s;
}
