// Which evidence disagrees with itself? The contradictions consolidation flagged for re-measurement:
// the same measured state, transform and setting with outcomes that disagree beyond measurement noise
// (`speedup`: helps in one attempt, hurts in another; `outcome`: the same child ran once and failed
// another time). Open ones first, the most attempts first.
// Parameters: $namespaces, $status (null for all, 'open' or 'resolved'), $limit.
// Returns: task, target, transform, params, kinds, attempts, helps, hurts, failed_twins, speedup range,
//   noise, status, flagged_at, attempt_keys (paste them into cypher/attempt_evidence.cypher).
// :param namespaces => ['demo']
// :param status => 'open'
// :param limit => 25
MATCH (x:Contradiction)
WHERE x.namespace IN $namespaces AND ($status IS NULL OR x.status = $status)
RETURN x.task AS task, x.target AS target, x.transform AS transform, x.params_json AS params,
       x.kinds AS kinds, x.attempts AS attempts, x.helps AS helps, x.hurts AS hurts,
       x.failed_twins AS failed_twins,
       round(exp(x.min_log_speedup), 3) AS min_speedup, round(exp(x.max_log_speedup), 3) AS max_speedup,
       round(x.noise, 3) AS noise, x.status AS status, toString(x.flagged_at) AS flagged_at,
       x.attempt_keys AS attempt_keys, x.contradiction_id AS contradiction_id
ORDER BY status, attempts DESC, task, transform
LIMIT $limit
