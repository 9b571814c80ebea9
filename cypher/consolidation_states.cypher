// Consolidation, step 1: every explored measured state of a namespace, with what groups re-measurements
// of the same kernel (kernel, target, counter source, evaluator and signature versions, and a signature
// within noise of the group's) and what weighs it (service/consolidation.py decides; docs/retrieval.md explains).
// Parameters: $namespace.
// Returns: one row per explored state: measurement_id, kernel_id, target, task, counter_source,
//   evaluator_version, signature_version, signature (0.0 where not measured), signature_dims (the measured
//   dimensions, signature version 2), merged_into, version_weight (null = 1.0), counters_separate_build
//   (schema 0014: cache counters from a separate build of the source).
// :param namespace => 'demo'
MATCH (m:Measurement {namespace: $namespace})
USING INDEX m:Measurement(namespace, explored)
WHERE m.explored = true
RETURN m.measurement_id AS measurement_id, m.kernel_id AS kernel_id, m.target AS target, m.task AS task,
       m.counter_source AS counter_source, m.evaluator_version AS evaluator_version,
       m.signature_version AS signature_version, coalesce(m.signature, m.merged_signature) AS signature,
       m.signature_dims AS signature_dims, m.merged_into AS merged_into,
       m.version_weight AS version_weight, coalesce(m.counters_separate_build, false) AS counters_separate_build
ORDER BY m.measurement_id
