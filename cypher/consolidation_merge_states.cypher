// Consolidation: merge re-measurements of one kernel into one state, and roll the state up, in one
// transaction. The duplicate stays (nothing is deleted; its attempts, aggregates and lineage keep
// answering), gains (dup)-[:MERGED_INTO]->(state) and `merged_into`, and leaves neighbour search; the
// state counts for `merged_count` + 1 measurements in neighbour search (cypher/nearest_states_*).
// Idempotent and safe beside concurrent writers: a duplicate already merged, or a state that was
// merged itself meanwhile, is left alone.
// Roll-up (schema 0010): a state others are merged into gets one (:EvidenceRollup) per transform and
// setting, (state)-[:HAS_ROLLUP]->(rollup): the StateEvidence of the state and of every duplicate
// summed (same properties; best, min and max over the parts), so retrieval reads one aggregate per
// (state, transform, setting) however many re-measurements the state stands for. Every member gets
// `rollup_into` and every aggregate summed `rollup_of` (the state's id); from then on
// cypher/record_attempts.cypher adds each new attempt from a member to the rollup as well, in the same
// transaction as to the member's own aggregate. A rollup is recomputed from its parts (overwritten, not
// incremented), so rolling up again changes nothing; it locks every member and every part before reading
// them, and record_attempts reads `rollup_of` / `rollup_into` only under the same locks, so an attempt
// recorded meanwhile is either summed here or added to the rollup by its writer, never both or neither.
// Parameters: $namespace, $rows (list of {duplicate, canonical}: measurement ids), $states (the states to
//   roll up: those of $rows, and any whose rollup is missing or stale), $no_source_vectors (every
//   per-source vector property -> null: service/recording.py NO_SOURCE_VECTORS).
// Returns: merged (how many duplicates this call merged), rolled_up (how many states it rolled up).
// :param namespace => 'demo'
// :param rows => [{duplicate: 'abc', canonical: 'abd'}]
// :param states => ['abd']
// :param no_source_vectors => {signature_cpu_cachegrind: null, signature_cpu_timing: null, signature_nvidia_ncu: null, signature_nvidia_timing: null, signature_nvidia_static: null, signature_kernelbench_timing: null}
CALL () {
  UNWIND $rows AS row
  MATCH (d:Measurement {namespace: $namespace, measurement_id: row.duplicate})
  MATCH (c:Measurement {namespace: $namespace, measurement_id: row.canonical})
  WITH d, c
  // No chains: a state others were merged into is not merged itself (rollups are one hop).
  WHERE d <> c AND d.merged_into IS NULL AND c.merged_into IS NULL
    AND NOT EXISTS { (:Measurement)-[:MERGED_INTO]->(d) }
  MERGE (d)-[:MERGED_INTO]->(c)
  // The duplicate's signature moves to `merged_signature` and its per-source vector (signature_<source>,
  // what the source's vector index holds; signature version 2) goes: it leaves the vector indexes, so
  // their candidates are distinct states. The signature is kept (with signature_dims and
  // signature_complete, which describe it, not index membership) and still shown by
  // cypher/attempt_evidence.cypher; the per-source vector is its values on signature_dims.
  SET d.merged_into = c.measurement_id, d.merged_at = datetime(), d.merged_signature = d.signature
  REMOVE d.signature
  SET d += $no_source_vectors
  WITH c, count(d) AS merged
  // How many measurements the state now stands for: neighbour search counts it as that many slots.
  SET c.merged_count = COUNT { (:Measurement)-[:MERGED_INTO]->(c) }
  RETURN sum(merged) AS merged
}
CALL () {
  UNWIND $states AS id
  MATCH (c:Measurement {namespace: $namespace, measurement_id: id})
  WHERE c.merged_into IS NULL AND EXISTS { (:Measurement)-[:MERGED_INTO]->(c) }
  CALL (c) {
    MATCH (d:Measurement)-[:MERGED_INTO]->(c)
    RETURN collect(d) AS duplicates
  }
  UNWIND [c] + duplicates AS member
  // The member's lock first (a writer creating a new aggregate on it reads `rollup_into` under it)...
  SET member.rollup_into = c.measurement_id
  WITH c, member
  MATCH (member)-[:HAS_EVIDENCE]->(e:StateEvidence)
  // ...then each part's (a writer adding to an aggregate reads `rollup_of` under it); read only after.
  SET e.rollup_of = c.measurement_id
  WITH c, e
  ORDER BY e.measurement_id
  // One rollup per recording key too (schema 0015): per-key aggregates survive consolidation. An
  // aggregate without a key is one schema 0015 has not marked yet (migration 0010's roll-up of an older
  // graph runs before it): `legacy`, as 0015 marks it.
  WITH c, e.transform AS transform, e.params_json AS params, coalesce(e.key_id, 'legacy') AS key_id,
       collect(e) AS parts
  MERGE (r:EvidenceRollup {namespace: $namespace, measurement_id: c.measurement_id, transform: transform,
                           params_json: params, key_id: key_id})
    ON CREATE SET r.created_at = datetime(), r.verified = coalesce(parts[0].verified, false)
  MERGE (c)-[:HAS_ROLLUP]->(r)
  // The best example: the part with the fastest attempt, or the first part while none has a runtime.
  WITH c, r, parts,
       reduce(b = null, x IN parts | CASE WHEN x.max_log_speedup IS NOT NULL AND
                                               (b IS NULL OR x.max_log_speedup > b.max_log_speedup)
                                          THEN x ELSE b END) AS fastest
  WITH c, r, parts, coalesce(fastest, parts[0]) AS best
  SET r.target = best.target, r.task = best.task,
      r.attempts = reduce(s = 0, x IN parts | s + x.attempts),
      r.successes = reduce(s = 0, x IN parts | s + x.successes),
      r.runtime_attempts = reduce(s = 0, x IN parts | s + x.runtime_attempts),
      r.sum_log_speedup = reduce(s = 0.0, x IN parts | s + x.sum_log_speedup),
      r.sum_sq_log_speedup = reduce(s = 0.0, x IN parts | s + x.sum_sq_log_speedup),
      r.min_log_speedup = reduce(v = null, x IN parts |
        CASE WHEN x.min_log_speedup IS NOT NULL AND (v IS NULL OR x.min_log_speedup < v) THEN x.min_log_speedup ELSE v END),
      r.max_log_speedup = best.max_log_speedup,
      r.best_attempt_key = best.best_attempt_key, r.best_speedup = best.best_speedup,
      r.best_outcome = best.best_outcome,
      r.attempt_keys = reduce(k = [], x IN parts | k + x.attempt_keys)[..50],
      r.disputed = CASE WHEN any(x IN parts WHERE x.disputed) THEN true END,
      r.quarantined = CASE WHEN all(x IN parts WHERE x.quarantined) THEN true END,
      r.rolled_up_at = datetime(), r.updated_at = datetime()
  RETURN count(DISTINCT c) AS rolled_up
}
RETURN merged, rolled_up
