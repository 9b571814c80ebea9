// Stored measurements by id in one namespace, with their kernel: what an attempt that names its
// parent by `parent_measurement_id` is resolved to (checked before anything is written).
// Parameters: $namespace, $measurement_ids (list). Returns: measurement_id, kernel_id, task, target.
// :param {namespace: 'demo', measurement_ids: ['0123456789abcdef0123456789abcdef']}
UNWIND $measurement_ids AS id
MATCH (m:Measurement {namespace: $namespace, measurement_id: id})-[:OF]->(k:Kernel)
RETURN m.measurement_id AS measurement_id, k.kernel_id AS kernel_id, k.task AS task, m.target AS target
