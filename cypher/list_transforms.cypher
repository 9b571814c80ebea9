// Every transform in the namespaces with its overall record.
// Parameters: $namespaces. Returns: transform, attempts, kept, geomean_speedup.
// :param {namespaces: ['demo']}
MATCH (t:Transform)
WHERE t.namespace IN $namespaces
OPTIONAL MATCH (a:Attempt)-[:APPLIED]->(t)
WHERE a.implausible IS NULL AND a.quarantined IS NULL  // never evidence (schema 0015)
WITH t.name AS transform, count(a) AS attempts,
     sum(CASE WHEN a.outcome = 'kept' THEN 1 ELSE 0 END) AS kept, avg(a.log_speedup) AS mean_log_speedup
RETURN transform, attempts, kept, exp(coalesce(mean_log_speedup, 0.0)) AS geomean_speedup
ORDER BY attempts DESC, transform
