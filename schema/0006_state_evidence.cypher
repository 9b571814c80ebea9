// Per-state aggregates: one (:StateEvidence) per (measured state, transform, parameter setting),
// maintained on write by cypher/record_attempts.cypher, so that retrieval reads one node per
// (neighbour, transform, setting) instead of every attempt behind every neighbour. They are the one
// place evidence is aggregated (consolidation builds on them); docs/graph-model.md lists each property.
// Keyed on (namespace, measurement_id, transform, params_json); reached from its state by
// (:Measurement)-[:HAS_EVIDENCE]->(:StateEvidence) or by the (namespace, measurement_id) index.
CREATE CONSTRAINT state_evidence_key IF NOT EXISTS
FOR (n:StateEvidence) REQUIRE (n.namespace, n.measurement_id, n.transform, n.params_json) IS UNIQUE;
CREATE INDEX state_evidence_state IF NOT EXISTS FOR (n:StateEvidence) ON (n.namespace, n.measurement_id);
// Backfill from the attempts a graph written before schema 0006 holds. Every aggregate is recomputed
// from its attempts and overwritten (not incremented), so running this again changes nothing. Run
// it before the service takes writes (`kernelgraph schema apply` at deploy, as for every migration).
MATCH (m:Measurement)<-[:FROM_STATE]-(a:Attempt)
WITH m, a ORDER BY m.namespace, m.measurement_id, a.attempt_key
WITH m, a.transform AS transform, a.params_json AS params, collect(a) AS attempts
CALL (m, transform, params, attempts) {
  MERGE (e:StateEvidence {namespace: m.namespace, measurement_id: m.measurement_id, transform: transform,
                          params_json: params})
    ON CREATE SET e.created_at = datetime()
  MERGE (m)-[:HAS_EVIDENCE]->(e)
  WITH e, m, attempts, [x IN attempts WHERE x.log_speedup IS NOT NULL] AS timed
  WITH e, m, attempts, timed,
       reduce(b = null, x IN timed | CASE WHEN b IS NULL OR x.log_speedup > b.log_speedup THEN x ELSE b END) AS best
  WITH e, m, attempts, timed, coalesce(best, attempts[0]) AS best
  SET e.target = m.target,
      e.task = m.task,
      e.attempts = size(attempts),
      e.successes = size([x IN attempts WHERE x.outcome = 'kept']),
      e.runtime_attempts = size(timed),
      e.sum_log_speedup = reduce(s = 0.0, x IN timed | s + x.log_speedup),
      e.sum_sq_log_speedup = reduce(s = 0.0, x IN timed | s + x.log_speedup * x.log_speedup),
      e.min_log_speedup = reduce(v = null, x IN timed | CASE WHEN v IS NULL OR x.log_speedup < v THEN x.log_speedup ELSE v END),
      e.max_log_speedup = reduce(v = null, x IN timed | CASE WHEN v IS NULL OR x.log_speedup > v THEN x.log_speedup ELSE v END),
      e.best_attempt_key = best.attempt_key,
      e.best_speedup = best.speedup,
      e.best_outcome = best.outcome,
      e.attempt_keys = [x IN attempts | x.attempt_key][..50],
      e.updated_at = datetime()
} IN TRANSACTIONS OF 1000 ROWS;
