// Measurements whose stored signature is older than $version, with their raw counters and their
// target's peaks: what schema migrations 0007 and 0018 re-sign (service/migrate.py), a batch at a time.
// Parameters: $version (core/signature.py SIGNATURE_VERSION), $limit.
// Returns: namespace, measurement_id, counter_source, counters_json, signature (the old vector), version
//   (the old vector's signature version), held_as
//   (null, or where consolidation moved the signature out of the vector indexes: 'merged_signature' for
//   a state merged into another, 'parked_signature' for one no attempt started from), explored (whether an
//   attempt started from it: only those are in the vector indexes), target (map or null).
// :param version => 3
// :param limit => 1000
MATCH (m:Measurement)
WHERE m.signature_version < $version
WITH m LIMIT $limit
OPTIONAL MATCH (h:HardwareTarget {namespace: m.namespace, name: m.target})
RETURN m.namespace AS namespace, m.measurement_id AS measurement_id, m.counter_source AS counter_source,
       m.counters_json AS counters_json, coalesce(m.signature, m.merged_signature, m.parked_signature) AS signature,
       m.signature_version AS version,
       CASE WHEN m.merged_into IS NOT NULL THEN 'merged_signature'
            WHEN m.parked_signature IS NOT NULL THEN 'parked_signature' END AS held_as,
       m.explored IS NOT NULL AS explored,
       CASE WHEN h IS NULL THEN null ELSE properties(h) END AS target
