// Store re-computed signatures (schema migration 0007, service/migrate.py). Each row's props are the
// Signature.stored() properties plus `signature_v1`, the vector it replaces.
// Parameters: $rows: list of {namespace, measurement_id, props}.
// Returns: updated (the number of measurements written).
// :param rows => []
UNWIND $rows AS row
MATCH (m:Measurement {namespace: row.namespace, measurement_id: row.measurement_id})
SET m += row.props
RETURN count(m) AS updated
