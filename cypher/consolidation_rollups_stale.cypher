// Consolidation: the states of a namespace whose rollup (schema 0010, cypher/consolidation_merge_states.cypher)
// is missing or does not cover every member: merged by code before schema 0010 (the migration rolls them
// up), or a run stopped between two batches. A state rolled up stays so: record_attempts keeps it current.
// Parameters: $namespace.
// Returns: state (measurement id), one row per state to roll up.
// :param namespace => 'demo'
MATCH (d:Measurement {namespace: $namespace})-[:MERGED_INTO]->(c:Measurement)
WHERE c.merged_into IS NULL
  AND (d.rollup_into IS NULL OR d.rollup_into <> c.measurement_id
       OR c.rollup_into IS NULL OR c.rollup_into <> c.measurement_id)
RETURN DISTINCT c.measurement_id AS state
ORDER BY state
