// Transform leaderboard per access pattern and target: how often each transform was tried from
// kernels of that pattern, how often it was kept, and the speedups it gave.
// Parameters: $namespaces, $pattern (or null for all), $target (or null for all), $limit.
// Returns: pattern, target, transform, attempts, kept, keep_rate, geomean_speedup (of measured attempts), best_speedup.
// :param namespaces => ['demo']
// :param pattern => null
// :param target => null
// :param limit => 100
MATCH (a:Attempt)-[:FROM]->(k:Kernel)-[:EXHIBITS]->(ap:AccessPattern)
WHERE a.namespace IN $namespaces AND ($pattern IS NULL OR ap.name = $pattern)
  AND ($target IS NULL OR a.target = $target)
  AND a.implausible IS NULL AND a.quarantined IS NULL  // never evidence (schema 0015)
WITH ap.name AS pattern, a.target AS target, a.transform AS transform,
     count(a) AS attempts,
     sum(CASE WHEN a.outcome = 'kept' THEN 1 ELSE 0 END) AS kept,
     avg(a.log_speedup) AS mean_log_speedup,
     max(a.speedup) AS best_speedup
RETURN pattern, target, transform, attempts, kept, toFloat(kept) / attempts AS keep_rate,
       exp(coalesce(mean_log_speedup, 0.0)) AS geomean_speedup, best_speedup
ORDER BY pattern, target, geomean_speedup DESC
LIMIT $limit
