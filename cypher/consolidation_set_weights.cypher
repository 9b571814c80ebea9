// Consolidation: how much a measured state's evidence counts in retrieval (superseded evaluator or
// stale signature: less; docs/retrieval.md). A null weight removes the property (counts 1.0).
// Only rows whose stored weight differs are written.
// Parameters: $namespace, $rows (list of {measurement_id, weight, reason}).
// Returns: changed.
// :param namespace => 'demo'
// :param rows => [{measurement_id: 'abc', weight: 0.25, reason: 'evaluator 1 superseded by 2'}]
UNWIND $rows AS row
MATCH (m:Measurement {namespace: $namespace, measurement_id: row.measurement_id})
WITH m, row
WHERE m.version_weight IS NULL AND row.weight IS NOT NULL OR m.version_weight <> row.weight
   OR m.version_weight IS NOT NULL AND row.weight IS NULL
SET m.version_weight = row.weight, m.version_weight_reason = row.reason, m.weighed_at = datetime()
RETURN count(m) AS changed
