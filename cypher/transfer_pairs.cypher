// Cross-target transfer: the same transform (same parameters) applied to the same kernel on target
// $source and on target $destination, with the log speedup it gave on each (averaged over repeats).
// Kernels match by kernel_id across the given namespaces. Optionally restricted to kernels that exhibit access pattern $pattern.
// Parameters: $namespaces, $source, $destination, $pattern (or null), $failure_log_speedup.
// Returns: transform, params, task, kernel_id, pattern, source_gain, destination_gain (natural log of speedup).
// :param {namespaces: ['demo'], source: 'cpu-x86-64-v4', destination: 'cpu-x86-64-v2', pattern: null, failure_log_speedup: -0.1}
MATCH (a1:Attempt)-[:FROM]->(k:Kernel)
WHERE a1.namespace IN $namespaces AND a1.target = $source
  AND ($pattern IS NULL OR EXISTS { (k)-[:EXHIBITS]->(:AccessPattern {name: $pattern}) })
  AND a1.implausible IS NULL AND a1.quarantined IS NULL  // never evidence (schema 0015)
// The same kernel (same source, so the same kernel_id) may live in another permitted namespace.
MATCH (a2:Attempt)-[:FROM]->(k2:Kernel {kernel_id: k.kernel_id})
WHERE a2.namespace IN $namespaces AND a2.target = $destination
  AND a1.transform = a2.transform AND a1.params_json = a2.params_json
  AND a2.implausible IS NULL AND a2.quarantined IS NULL
WITH k, a1.transform AS transform, a1.params_json AS params,
     avg(coalesce(a1.log_speedup, $failure_log_speedup)) AS source_gain,
     avg(coalesce(a2.log_speedup, $failure_log_speedup)) AS destination_gain
OPTIONAL MATCH (k)-[:EXHIBITS]->(ap:AccessPattern)
RETURN transform, params, k.task AS task, k.kernel_id AS kernel_id, min(ap.name) AS pattern,
       source_gain, destination_gain
ORDER BY transform, source_gain DESC
