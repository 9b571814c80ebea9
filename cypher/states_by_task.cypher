// Measured states recorded for the given task labels, each with similarity 1: retrieval by label
// (mode `label`: "what worked on this task?") and, with $tasks null, every state alike (mode
// `global`: the prior of all stored experience). Attempts must have been made from them. States that
// consolidation merged into another are read through that one (cypher/aggregate_transforms), so each
// re-measured kernel is one state here, as in the other modes.
// Parameters: $tasks (list, or null for all), $namespaces, $exclude_tasks, $limit, $transforms, $verified_only.
// Returns: measurement_id, target, task, score (1.0), slots (1 + the re-measurements merged into the state).
// Within the query's vocabulary ($transforms, null: every transform): a state is a candidate only when it
// holds evidence aggregate_transforms reads for one of $transforms (not quarantined; verified with
// $verified_only), before ranking and the limit (docs/retrieval.md, "Within the query's vocabulary").
// :param tasks => ['matmul']
// :param namespaces => ['demo']
// :param exclude_tasks => []
// :param limit => 5000
// :param transforms => ['unroll', 'vectorize']
// :param verified_only => false
MATCH (m:Measurement)
USING INDEX m:Measurement(namespace, explored)
WHERE m.namespace IN $namespaces AND m.explored = true AND m.merged_into IS NULL AND NOT m.task IN $exclude_tasks
  AND ($tasks IS NULL OR m.task IN $tasks)
  AND ($transforms IS NULL OR EXISTS {
    MATCH (m)-[:HAS_EVIDENCE|HAS_ROLLUP]->(e)
    WHERE e.transform IN $transforms AND e.quarantined IS NULL AND (NOT $verified_only OR e.verified)
  })
RETURN m.measurement_id AS measurement_id, m.target AS target, m.task AS task, 1.0 AS score,
       1 + coalesce(m.merged_count, 0) AS slots
ORDER BY measurement_id
LIMIT $limit
