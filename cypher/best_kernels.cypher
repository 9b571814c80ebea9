// The best kernel so far per task and target: the fastest correct measurement, with its source and
// its speedup over the task's starting kernel on that target (a kernel with no DERIVED_FROM parent).
// Parameters: $namespaces, $task (or null for all), $target (or null for all), $limit.
// Returns: task, target, kernel_id, variant, best_ns, baseline_ns, speedup (baseline_ns / best_ns; null
//   when no starting kernel was measured there), kernels (distinct kernels measured), measurement_id,
//   source; by task and target.
// :param namespaces => ['tour']
// :param task => null
// :param target => null
// :param limit => 50
MATCH (m:Measurement)-[:OF]->(k:Kernel)
WHERE m.namespace IN $namespaces AND m.correct = true AND m.median_ns IS NOT NULL
  AND ($task IS NULL OR m.task = $task) AND ($target IS NULL OR m.target = $target)
WITH m, k ORDER BY m.median_ns, m.measurement_id
WITH m.task AS task, m.target AS target, collect({m: m, k: k})[0] AS best, count(DISTINCT k) AS kernels
CALL (task, target) {
  OPTIONAL MATCH (r:Measurement)-[:OF]->(root:Kernel)
  WHERE r.namespace IN $namespaces AND r.task = task AND r.target = target AND r.correct = true
    AND NOT (root)-[:DERIVED_FROM]->(:Kernel)
  RETURN max(r.median_ns) AS baseline_ns
}
RETURN task, target, best.k.kernel_id AS kernel_id, best.k.variant AS variant, best.m.median_ns AS best_ns,
       baseline_ns, baseline_ns / best.m.median_ns AS speedup, kernels,
       best.m.measurement_id AS measurement_id, best.k.source AS source
ORDER BY task, target
LIMIT $limit
