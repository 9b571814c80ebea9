// Consolidation, step 2: the per-state aggregates (StateEvidence, schema 0006) of a namespace, in the
// few figures consolidation needs to find the groups that could hold a contradiction.
// Parameters: $namespace.
// Returns: measurement_id, transform, params_json, attempts, runtime_attempts, min_log_speedup,
//   max_log_speedup, disputed (true when a contradiction is flagged on it).
// :param namespace => 'demo'
// One row per recording key's aggregate (schema 0015); a quarantined key's evidence is left out.
MATCH (e:StateEvidence {namespace: $namespace})
WHERE e.quarantined IS NULL
RETURN e.measurement_id AS measurement_id, e.transform AS transform, e.params_json AS params_json,
       e.attempts AS attempts, e.runtime_attempts AS runtime_attempts,
       e.min_log_speedup AS min_log_speedup, e.max_log_speedup AS max_log_speedup,
       coalesce(e.disputed, false) AS disputed
