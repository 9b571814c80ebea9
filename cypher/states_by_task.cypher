// Measured states recorded for the given task labels, each with similarity 1: retrieval by label
// (mode `label`: "what worked on this task?") and, with $tasks null, every state alike (mode
// `global`: the prior of all stored experience). Attempts must have been made from them.
// Parameters: $tasks (list, or null for all), $namespaces, $exclude_tasks, $limit.
// Returns: measurement_id, target, task, score (1.0).
// :param tasks => ['matmul']
// :param namespaces => ['demo']
// :param exclude_tasks => []
// :param limit => 5000
MATCH (m:Measurement)
WHERE m.namespace IN $namespaces AND m.explored AND NOT m.task IN $exclude_tasks
  AND ($tasks IS NULL OR m.task IN $tasks)
RETURN m.measurement_id AS measurement_id, m.target AS target, m.task AS task, 1.0 AS score
ORDER BY measurement_id
LIMIT $limit
