// Transforms tried from a set of neighbouring measured states, aggregated and ranked.
// It reads the per-state aggregates (StateEvidence), never the attempts. Each attempt made from a
// neighbour counts with weight = similarity x (1 on $target, else $other_target_weight); failed
// attempts (no speedup) count as $failure_log_speedup.
// score = weighted_log_speedup x confidence, confidence = total weight / (total weight + $prior_weight),
// so a transform seen once on a far state is shrunk towards zero.
// Parameters: $neighbours (list of {measurement_id, score}), $namespaces, $target, $other_target_weight,
//   $failure_log_speedup, $prior_weight, $limit.
// Returns: one row per transform with every score component (evidence_weight: the total weight), the
// best example, evidence ids, and `by_params`: the same figures per parameter setting (best first), so
// a proposer can tell a good setting of a transform from a harmful one (with the spread of its log
// speedups and whether consolidation flagged it `disputed`), and `disputed`: how many settings are.
// :param neighbours => [{measurement_id: 'abc', score: 0.9}]
// :param namespaces => ['demo']
// :param target => 'cpu-native'
// :param other_target_weight => 0.7
// :param failure_log_speedup => -0.1
// :param prior_weight => 1.0
// :param limit => 10
UNWIND $neighbours AS neighbour
// One aggregate (StateEvidence, schema 0006, or a state's rollup of them) per (neighbour, transform,
// setting): the attempts behind it are not walked. Its figures are what the attempts would sum to, with the
// failures' gain counted here, so $failure_log_speedup stays a query-time knob.
// A neighbour is one state. A state consolidation merged re-measurements of the same kernel into
// (MERGED_INTO) is read through its rollups (EvidenceRollup, schema 0010): per setting, the sum of its
// own aggregate and its duplicates', kept current by record_attempts.cypher, so it costs one aggregate
// per (state, transform, setting) like any state, however many re-measurements it stands for. Each
// aggregate counts times its state's `version_weight` (a superseded evaluator or signature counts less;
// absent: 1.0); a state and its duplicates share it (they are merged only with the same evaluator,
// signature version and counter source). On a graph never consolidated this is exactly the state's own
// aggregates at weight 1.
MATCH (m:Measurement {measurement_id: neighbour.measurement_id})
WHERE m.namespace IN $namespaces
CALL (m) {
  MATCH (m)-[:HAS_ROLLUP]->(e:EvidenceRollup)
  WHERE m.rollup_into = m.measurement_id
  RETURN e
  UNION ALL
  MATCH (m)-[:HAS_EVIDENCE]->(e:StateEvidence)
  WHERE m.rollup_into IS NULL OR m.rollup_into <> m.measurement_id
  RETURN e
}
WITH e, m.measurement_id AS state, neighbour.score AS similarity,
     neighbour.score * coalesce(m.version_weight, 1.0) *
       CASE WHEN e.target = $target THEN 1.0 ELSE $other_target_weight END AS weight
// First per (transform, parameter setting)...
WITH e.transform AS transform, e.params_json AS params,
     sum(e.attempts) AS attempts,
     sum(e.successes) AS successes,
     sum(weight * (e.sum_log_speedup + (e.attempts - e.runtime_attempts) * $failure_log_speedup)) AS weighted_gain,
     sum(weight * e.attempts) AS total_weight,
     sum(similarity * e.attempts) AS similarity_sum,
     sum(CASE WHEN e.target = $target THEN e.attempts ELSE 0 END) AS same_target_attempts,
     max(e.best_speedup) AS best_speedup,
     collect(DISTINCT state) AS measurement_ids,
     reduce(keys = [], group IN collect(e.attempt_keys) | keys + group) AS attempt_keys,
     collect({attempt_key: e.best_attempt_key, params: e.params_json, speedup: e.best_speedup,
              outcome: e.best_outcome, task: e.task, target: e.target, similarity: similarity,
              gain: coalesce(e.max_log_speedup, $failure_log_speedup)}) AS examples,
     sum(e.runtime_attempts) AS runs,
     sum(e.sum_log_speedup) AS run_sum,
     sum(e.sum_sq_log_speedup) AS run_sum_sq,
     max(CASE WHEN e.disputed THEN 1 ELSE 0 END) AS disputed
// The spread of the setting's log speedups over the attempts that ran (sample sd, none below 2 runs).
WITH transform, params, attempts, successes, weighted_gain, total_weight, similarity_sum,
     same_target_attempts, best_speedup, measurement_ids, attempt_keys, examples, disputed,
     CASE WHEN runs >= 2 THEN sqrt(CASE WHEN run_sum_sq - run_sum * run_sum / runs > 0
                                        THEN (run_sum_sq - run_sum * run_sum / runs) / (runs - 1) ELSE 0.0 END)
     END AS sd_log_speedup
ORDER BY transform, weighted_gain / total_weight DESC
// ...then per transform, keeping the per-setting figures.
WITH transform,
     sum(attempts) AS attempts,
     sum(successes) AS successes,
     sum(weighted_gain) AS weighted_gain,
     sum(total_weight) AS total_weight,
     sum(similarity_sum) / sum(attempts) AS mean_similarity,
     sum(same_target_attempts) AS same_target_attempts,
     max(best_speedup) AS best_speedup,
     collect({params: params, attempts: attempts, successes: successes, weight: total_weight,
              weighted_log_speedup: weighted_gain / total_weight, sd_log_speedup: sd_log_speedup,
              disputed: disputed = 1}) AS by_params,
     sum(disputed) AS disputed,
     reduce(ids = [], group IN collect(measurement_ids) | ids + [i IN group WHERE NOT i IN ids]) AS evidence_measurement_ids,
     reduce(keys = [], group IN collect(attempt_keys) | keys + group) AS attempt_keys,
     reduce(best = null, group IN collect(examples) |
       reduce(b = best, x IN group | CASE WHEN b IS NULL OR x.gain > b.gain THEN x ELSE b END)) AS best_example
WITH transform, attempts, successes, total_weight, mean_similarity, same_target_attempts, best_speedup,
     by_params, evidence_measurement_ids, attempt_keys, best_example, disputed,
     weighted_gain / total_weight AS weighted_log_speedup,
     total_weight / (total_weight + $prior_weight) AS confidence
RETURN transform,
       weighted_log_speedup * confidence AS score,
       attempts,
       successes,
       toFloat(successes) / attempts AS success_rate,
       weighted_log_speedup,
       confidence,
       total_weight AS evidence_weight,
       mean_similarity,
       same_target_attempts,
       attempts - same_target_attempts AS other_target_attempts,
       best_speedup,
       best_example {.attempt_key, .params, .speedup, .outcome, .task, .target, .similarity} AS best_example,
       [p IN by_params[..5] | p.params] AS params,
       by_params,
       evidence_measurement_ids,
       attempt_keys[..50] AS evidence_attempt_keys,
       disputed
ORDER BY score DESC, attempts DESC
LIMIT $limit
