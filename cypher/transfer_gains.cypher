// Every measured effect of a transform: per target, transform (with its parameters) and parent kernel,
// the natural log of the speedup, averaged over repeats. Failed attempts (no speedup) are left out:
// a transfer matrix compares measured effects. Kernels match by kernel_id across the namespaces.
// Parameters: $namespaces (list), $transform (a transform name, or null for all).
// Returns: target, transform, params, kernel_id, task, gain, attempts.
// :param {namespaces: ['kb'], transform: null}
MATCH (a:Attempt)-[:FROM]->(k:Kernel)
WHERE a.namespace IN $namespaces AND a.log_speedup IS NOT NULL
  AND ($transform IS NULL OR a.transform = $transform)
  AND a.implausible IS NULL AND a.quarantined IS NULL  // never evidence (schema 0015)
RETURN a.target AS target, a.transform AS transform, a.params_json AS params, k.kernel_id AS kernel_id,
       k.task AS task, avg(a.log_speedup) AS gain, count(a) AS attempts
ORDER BY target, transform, kernel_id
