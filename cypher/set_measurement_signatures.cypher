// Store re-computed signatures (schema migrations 0007 and 0018, service/migrate.py). Each row's props are
// the Signature.stored() properties plus `signature_v<old version>`, the vector it replaces.
// Parameters: $rows: list of {namespace, measurement_id, props}.
// Returns: updated (the number of measurements written).
// :param rows => []
UNWIND $rows AS row
MATCH (m:Measurement {namespace: row.namespace, measurement_id: row.measurement_id})
SET m += row.props
RETURN count(m) AS updated
