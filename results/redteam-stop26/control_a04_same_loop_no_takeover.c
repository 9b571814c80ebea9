/* Control for a04: a04's summing code (the same static helper, compiled the same way) but returning
   from every call, so the child's Python loop serves the FIFOs. If a04's edge over the baseline is
   its own serve loop, this one has none; if it is a04's code generation, it has it too. */
static double sum_range(const float* x, long lo, long hi) {
    double s = 0.0;
    for (long i = lo; i < hi; i++) s += x[i];
    return s;
}

void kernel(const float* restrict x, float* restrict out, int n) {
    out[0] = (float)sum_range(x, 0, n);
}
