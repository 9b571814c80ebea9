// Measurements carry their yardsticks (agent/library.py): `library` (the call a user would make instead,
// with its version and thread count), `library_median_ns`, `naive_median_ns`, the speedups the service
// computes from them (`speedup_vs_library`, `speedup_vs_naive`), `achieved_gflops`, `achieved_gbps` and
// `roofline_fraction`. All are absent on measurements recorded
// before them: not measured, never zero. This index answers "which kernels beat the library" (fast_p)
// per task without a scan.
CREATE INDEX measurement_vs_library IF NOT EXISTS FOR (n:Measurement) ON (n.namespace, n.task, n.speedup_vs_library);
