// Record a batch of attempts, each with its kernels, transform, access patterns and measurements,
// in one transaction (after record_vocabulary.cypher merged the transforms and patterns).
// Idempotent: every node is MERGEd on its constrained natural key and written only ON CREATE, so a
// replay, or a concurrent duplicate, changes nothing. An attempt made from a measured state also
// updates that state's aggregate for its (transform, setting) (StateEvidence), in the same
// transaction, so an aggregate counts exactly the attempts stored. Relationships hang off nodes created here
// (marked with $write_token), so they are CREATEd, not MERGEd: recording stays fast as the graph grows.
// Parameters: $namespace, $write_token (a fresh random string per call), $source_vectors (each counter
// source's per-source vector property, core/signature.py source_property), $source_scales (each counter
// source's scale per signature dimension, core/signature.py SOURCE_SCALES_PARAM), $rows: list of maps
//   {attempt_key, target, transform, evidence_gain, attempt: {flat props, recorded_by, verified,
//    implausible, content_hash, ...}, parent: {kernel_id, patterns, props},
//    child: {...}, parent_measurements: [0..1 of {measurement_id, props}], child_measurements: [0..1]}
// Returns: attempt_key, created (false when the attempt was already stored).
// :param namespace => 'demo'
// :param write_token => 'browser-1'
// :param source_vectors => {cpu_cachegrind: 'signature_cpu_cachegrind', cpu_timing: 'signature_cpu_timing', nvidia_ncu: 'signature_nvidia_ncu', nvidia_timing: 'signature_nvidia_timing', nvidia_static: 'signature_nvidia_static', kernelbench_timing: 'signature_kernelbench_timing'}
// :param source_scales => {cpu_cachegrind: [0.04411, 0.1157, 0.04008, 0.04005, 0.08597, 0.1858, 0.03638, 1.0, 1.0, 0.05575, 1.0], cpu_timing: [0.04411, 0.1157, 0.04008, 0.04005, 0.08597, 0.1858, 0.03638, 1.0, 1.0, 0.05575, 1.0], nvidia_ncu: [1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0], nvidia_timing: [1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0], nvidia_static: [1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0], kernelbench_timing: [1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0]}
// :param rows => [{attempt_key: 'browser:1', target: 'cpu-native', transform: 'unroll', evidence_gain: 0.405, attempt: {run_id: 'browser', agent: 'me', target: 'cpu-native', task: 'matmul', outcome: 'kept', speedup: 1.5, log_speedup: 0.405, params_json: '{}', diagnosis: '', rationale: '', recorded_by: 'browser', verified: false, content_hash: 'x'}, parent: {kernel_id: 'k0', patterns: ['dense-matmul'], props: {task: 'matmul', backend: 'c', family: 'dense-matmul', variant: 'naive', source: 'void kernel(){}'}}, child: {kernel_id: 'k1', patterns: ['dense-matmul'], props: {task: 'matmul', backend: 'c', family: 'dense-matmul', variant: 'unroll4', source: 'void kernel(){ }'}}, parent_measurements: [], child_measurements: []}]
UNWIND $rows AS row
MATCH (h:HardwareTarget {namespace: $namespace, name: row.target})
MATCH (t:Transform {namespace: $namespace, name: row.transform})
MERGE (a:Attempt {namespace: $namespace, attempt_key: row.attempt_key})
  ON CREATE SET a += row.attempt, a.write_token = $write_token, a.created_at = datetime()
WITH row, h, t, a, a.write_token = $write_token AS created
CALL (row, h, t, a, created) {
  WITH * WHERE created
  CREATE (a)-[:APPLIED]->(t), (a)-[:ON_TARGET]->(h)
  MERGE (p:Kernel {namespace: $namespace, kernel_id: row.parent.kernel_id})
    ON CREATE SET p += row.parent.props, p.created_at = datetime(), p.write_token = $write_token
  MERGE (c:Kernel {namespace: $namespace, kernel_id: row.child.kernel_id})
    ON CREATE SET c += row.child.props, c.created_at = datetime(), c.write_token = $write_token
  CREATE (a)-[:FROM]->(p), (a)-[:PRODUCED]->(c),
         (c)-[:DERIVED_FROM {attempt_key: row.attempt_key, transform: row.transform}]->(p)
  WITH row, h, a, p, c
  // Patterns of kernels first seen in this call (MERGE: one kernel may appear in several rows).
  CALL (row, p, c) {
    UNWIND [x IN row.parent.patterns WHERE p.write_token = $write_token | [p, x]] +
           [x IN row.child.patterns WHERE c.write_token = $write_token | [c, x]] AS pair
    WITH pair[0] AS kernel, pair[1] AS name
    MATCH (ap:AccessPattern {namespace: $namespace, name: name})
    MERGE (kernel)-[:EXHIBITS]->(ap)
  }
  CALL (row, h, a, p) {
    UNWIND row.parent_measurements AS m
    MERGE (pm:Measurement {namespace: $namespace, measurement_id: m.measurement_id})
      ON CREATE SET pm += m.props, pm.recorded_at = datetime(), pm.write_token = $write_token
    // Mark the state explored once (an unconditional SET would lock it on every attempt). Only now does
    // it enter its source's vector index: when complete, it gets its per-source vector
    // ($source_vectors[source]: the values on signature_dims, each divided by its source's scale,
// core/signature.py Signature.source_vector).
    // Measurements are stored without one, so the indexes hold only states neighbour search can
    // return. A state that consolidation parked gets its signature back first.
    FOREACH (_ IN CASE WHEN pm.explored IS NULL THEN [1] ELSE [] END |
      SET pm.explored = true, pm.signature = coalesce(pm.signature, pm.parked_signature)
      FOREACH (__ IN CASE WHEN pm.signature_complete AND pm.counter_source IS NOT NULL
                          AND pm.merged_into IS NULL THEN [1] ELSE [] END |
        SET pm[$source_vectors[pm.counter_source]] =
            [i IN pm.signature_dims | pm.signature[i] / $source_scales[pm.counter_source][i]])
      REMOVE pm.parked_signature)
    FOREACH (_ IN CASE WHEN pm.write_token = $write_token THEN [1] ELSE [] END |
      MERGE (pm)-[:OF]->(p)
      MERGE (pm)-[:ON]->(h))
    CREATE (a)-[:FROM_STATE]->(pm)
    // An implausible attempt (times beyond the target's peaks, schema 0015) is stored but never evidence.
    WITH row, pm WHERE row.attempt.implausible IS NULL
    // The per-state aggregate of (state, transform, setting, recording key), maintained here and only
    // here (schemas 0006, 0015; docs/graph-model.md). Every SET item below reads the property it writes,
    // so Cypher takes the aggregate's write lock before reading it: concurrent writers never lose an increment.
    WITH row, pm, {attempts: 0, successes: 0, runtime_attempts: 0, sum_log_speedup: 0.0,
                   sum_sq_log_speedup: 0.0, attempt_keys: []} AS empty
    MERGE (e:StateEvidence {namespace: $namespace, measurement_id: pm.measurement_id, transform: row.transform,
                            params_json: row.attempt.params_json, key_id: row.attempt.recorded_by})
      ON CREATE SET e += empty, e.target = pm.target, e.task = pm.task, e.created_at = datetime(),
                    e.verified = row.attempt.verified
    // A new aggregate is linked to its state and learns the state's rollup (`rollup_into`: consolidation
    // merged re-measurements into or from it, schema 0010), read after locking the state (the SET
    // before it), the lock consolidation holds while it rolls the state up: either that roll-up sums
    // this aggregate (it committed first) or this write sees `rollup_into` (the roll-up committed first).
    FOREACH (_ IN CASE WHEN e.attempts = 0 THEN [1] ELSE [] END |
      CREATE (pm)-[:HAS_EVIDENCE]->(e)
      SET pm.evidence_at = datetime()
      SET e.rollup_of = pm.rollup_into)
    // The aggregate's lock, taken before `rollup_of` is read: consolidation sets it under the same lock.
    SET e.updated_at = datetime()
    // The evidence's gain: the log speedup clipped to +-log(EVIDENCE_MAX_SPEEDUP) (service/recording.py).
    WITH row, e, empty, row.evidence_gain AS gain
    // A rolled-up state's rollup (the one aggregate retrieval reads for it) takes the attempt too, in this
    // transaction, so a rollup always equals the sum of its parts without consolidation running again.
    CALL (row, e, empty) {
      WITH row, e, empty WHERE e.rollup_of IS NOT NULL
      MERGE (r:EvidenceRollup {namespace: $namespace, measurement_id: e.rollup_of, transform: row.transform,
                               params_json: row.attempt.params_json, key_id: e.key_id})
        ON CREATE SET r += empty, r.target = e.target, r.task = e.task, r.created_at = datetime(),
                      r.verified = e.verified
      WITH e, r
      CALL (e, r) {
        WITH e, r WHERE r.attempts = 0
        MATCH (state:Measurement {namespace: $namespace, measurement_id: e.rollup_of})
        CREATE (state)-[:HAS_ROLLUP]->(r)
      }
      RETURN collect(r) AS rollups
    }
    UNWIND [e] + rollups AS agg
    // The right-hand sides all read the values from before this SET.
    SET agg.attempts = agg.attempts + 1,
        agg.successes = agg.successes + CASE WHEN row.attempt.outcome = 'kept' THEN 1 ELSE 0 END,
        agg.runtime_attempts = agg.runtime_attempts + CASE WHEN gain IS NULL THEN 0 ELSE 1 END,
        agg.sum_log_speedup = agg.sum_log_speedup + coalesce(gain, 0.0),
        agg.sum_sq_log_speedup = agg.sum_sq_log_speedup + coalesce(gain * gain, 0.0),
        agg.min_log_speedup = CASE WHEN gain IS NOT NULL AND (agg.min_log_speedup IS NULL OR gain < agg.min_log_speedup)
                                   THEN gain ELSE agg.min_log_speedup END,
        // The best example: the fastest attempt, or the first one while none has a runtime.
        agg.best_attempt_key = CASE WHEN agg.best_attempt_key IS NULL OR (gain IS NOT NULL AND
                                         (agg.max_log_speedup IS NULL OR gain > agg.max_log_speedup))
                                    THEN row.attempt_key ELSE agg.best_attempt_key END,
        agg.best_speedup = CASE WHEN agg.best_attempt_key IS NULL OR (gain IS NOT NULL AND
                                     (agg.max_log_speedup IS NULL OR gain > agg.max_log_speedup))
                                THEN row.attempt.speedup ELSE agg.best_speedup END,
        agg.best_outcome = CASE WHEN agg.best_attempt_key IS NULL OR (gain IS NOT NULL AND
                                     (agg.max_log_speedup IS NULL OR gain > agg.max_log_speedup))
                                THEN row.attempt.outcome ELSE agg.best_outcome END,
        agg.max_log_speedup = CASE WHEN gain IS NOT NULL AND (agg.max_log_speedup IS NULL OR gain > agg.max_log_speedup)
                                   THEN gain ELSE agg.max_log_speedup END,
        agg.attempt_keys = CASE WHEN size(agg.attempt_keys) < 50 THEN agg.attempt_keys + row.attempt_key
                                ELSE agg.attempt_keys END,
        agg.updated_at = datetime()
  }
  CALL (row, h, a, c) {
    UNWIND row.child_measurements AS m
    MERGE (cm:Measurement {namespace: $namespace, measurement_id: m.measurement_id})
      ON CREATE SET cm += m.props, cm.recorded_at = datetime(), cm.write_token = $write_token
    FOREACH (_ IN CASE WHEN cm.write_token = $write_token THEN [1] ELSE [] END |
      MERGE (cm)-[:OF]->(c)
      MERGE (cm)-[:ON]->(h))
    CREATE (a)-[:RESULTED_IN]->(cm)
  }
}
RETURN row.attempt_key AS attempt_key, created
