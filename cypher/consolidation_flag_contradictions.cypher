// Consolidation: flag evidence that disagrees beyond measurement noise (same state, transform and
// setting) for re-measurement: one (:Contradiction) per group, linked to the state it is about
// (ABOUT), the transform (OF_TRANSFORM) and every attempt involved (INVOLVES); the group's
// aggregates (and the state's rollup of them) are marked `disputed`, which retrieval reports. Written
// only when new or changed (its fingerprint is the kinds and attempt keys), so a second run writes nothing.
// Parameters: $namespace, $rows (list of {contradiction_id, state, measurement_ids, transform,
//   params_json, task, target, kinds, attempt_keys, attempts, helps, hurts, failed_twins,
//   mean_log_speedup, sd_log_speedup, min_log_speedup, max_log_speedup, noise, fingerprint}).
// Returns: written.
// :param namespace => 'demo'
// :param rows => []
UNWIND $rows AS row
MERGE (x:Contradiction {namespace: $namespace, contradiction_id: row.contradiction_id})
  ON CREATE SET x.flagged_at = datetime()
WITH x, row
WHERE x.fingerprint IS NULL OR x.fingerprint <> row.fingerprint OR x.status <> 'open'
SET x += row {.state, .measurement_ids, .transform, .params_json, .task, .target, .kinds, .attempts, .helps, .hurts,
              .failed_twins, .mean_log_speedup, .sd_log_speedup, .min_log_speedup, .max_log_speedup,
              .noise, .fingerprint},
    x.attempt_keys = row.attempt_keys[..50], x.status = 'open', x.updated_at = datetime()
WITH x, row
CALL (x, row) {
  MATCH (m:Measurement {namespace: $namespace, measurement_id: row.state})
  MERGE (x)-[:ABOUT]->(m)
}
CALL (x, row) {
  MATCH (t:Transform {namespace: $namespace, name: row.transform})
  MERGE (x)-[:OF_TRANSFORM]->(t)
}
CALL (x, row) {
  UNWIND row.attempt_keys AS key
  MATCH (a:Attempt {namespace: $namespace, attempt_key: key})
  MERGE (x)-[:INVOLVES]->(a)
}
CALL (x, row) {
  UNWIND row.measurement_ids AS id
  MATCH (e:StateEvidence {namespace: $namespace, measurement_id: id, transform: row.transform,
                         params_json: row.params_json})
  SET e.disputed = true
}
// The state's rollup of the group (schema 0010), which retrieval reads instead of the parts.
CALL (x, row) {
  MATCH (r:EvidenceRollup {namespace: $namespace, measurement_id: row.state, transform: row.transform,
                          params_json: row.params_json})
  SET r.disputed = true
}
RETURN count(x) AS written
