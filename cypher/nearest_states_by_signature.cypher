// Nearest measured states to a counter signature, through the vector index (approximate).
// Over-fetches $fetch_k candidates, then keeps states in $namespaces that attempts were made from
// (m.explored) and that consolidation did not merge into another (a re-measurement of the same
// kernel: retrieval reads it through the state it was merged into), leaving out $exclude_tasks.
// Parameters: $signature (list of 12 floats in [0,1]), $fetch_k, $k, $namespaces, $exclude_tasks (list, may be empty).
// Returns: measurement_id, target, task, score (euclidean similarity 1/(1+d^2)), slots (1 + the
//   re-measurements merged into the state), best first.
// :param signature => [0.1, 0.8, 0.3, 0.2, 0.1, 0.05, 0.5, 0.1, 0.0, 0.5, 0.0, 0.8]
// :param fetch_k => 200
// :param k => 20
// :param namespaces => ['demo']
// :param exclude_tasks => []
CALL db.index.vector.queryNodes('measurement_signature', $fetch_k, $signature) YIELD node AS m, score
WHERE m.namespace IN $namespaces AND m.explored AND m.merged_into IS NULL AND NOT m.task IN $exclude_tasks
RETURN m.measurement_id AS measurement_id, m.target AS target, m.task AS task, score,
       1 + coalesce(m.merged_count, 0) AS slots
ORDER BY score DESC
LIMIT $k
