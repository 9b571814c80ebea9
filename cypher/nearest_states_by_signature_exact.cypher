// Nearest measured states to a counter signature by exact scoring of every explored state (those
// consolidation merged into another are read through that one, not scored).
// Used instead of the vector index when the candidate set is small (exact beats approximate there).
// Parameters: $signature (list of 12 floats in [0,1]), $k, $namespaces, $exclude_tasks (list, may be empty).
// Returns: measurement_id, target, task, score (euclidean similarity 1/(1+d^2)), slots (1 + the
//   re-measurements merged into the state), best first.
// :param signature => [0.1, 0.8, 0.3, 0.2, 0.1, 0.05, 0.5, 0.1, 0.0, 0.5, 0.0, 0.8]
// :param k => 20
// :param namespaces => ['demo']
// :param exclude_tasks => []
MATCH (m:Measurement)
WHERE m.namespace IN $namespaces AND m.explored AND m.merged_into IS NULL AND NOT m.task IN $exclude_tasks
WITH m, vector.similarity.euclidean(m.signature, $signature) AS score
RETURN m.measurement_id AS measurement_id, m.target AS target, m.task AS task, score,
       1 + coalesce(m.merged_count, 0) AS slots
ORDER BY score DESC
LIMIT $k
