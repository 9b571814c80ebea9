// Transforms tried from a set of neighbouring measured states, aggregated and ranked.
// Each attempt made from a neighbour counts with weight = similarity x (1 on $target, else
// $other_target_weight); failed attempts (no speedup) count as $failure_log_speedup.
// score = weighted_log_speedup x confidence, confidence = total weight / (total weight + $prior_weight),
// so a transform seen once on a far state is shrunk towards zero.
// Parameters: $neighbours (list of {measurement_id, score}), $namespaces, $target, $other_target_weight,
//   $failure_log_speedup, $prior_weight, $limit.
// Returns: one row per transform with every score component, the best example, and evidence ids.
// :param neighbours => [{measurement_id: 'abc', score: 0.9}]
// :param namespaces => ['demo']
// :param target => 'cpu-native'
// :param other_target_weight => 0.7
// :param failure_log_speedup => -0.1
// :param prior_weight => 1.0
// :param limit => 10
UNWIND $neighbours AS neighbour
MATCH (m:Measurement {measurement_id: neighbour.measurement_id})
WHERE m.namespace IN $namespaces
MATCH (a:Attempt)-[:FROM_STATE]->(m)
WITH a, m, neighbour.score AS similarity,
     neighbour.score * CASE WHEN m.target = $target THEN 1.0 ELSE $other_target_weight END AS weight,
     coalesce(a.log_speedup, $failure_log_speedup) AS gain
ORDER BY gain DESC
WITH a.transform AS transform,
     count(a) AS attempts,
     sum(CASE WHEN a.outcome = 'kept' THEN 1 ELSE 0 END) AS successes,
     sum(weight * gain) AS weighted_gain,
     sum(weight) AS total_weight,
     avg(similarity) AS mean_similarity,
     sum(CASE WHEN m.target = $target THEN 1 ELSE 0 END) AS same_target_attempts,
     max(a.speedup) AS best_speedup,
     collect(DISTINCT m.measurement_id) AS evidence_measurement_ids,
     collect(a.attempt_key) AS attempt_keys,
     collect({attempt_key: a.attempt_key, params: a.params_json, speedup: a.speedup, outcome: a.outcome,
              task: m.task, target: m.target, similarity: similarity}) AS examples
WITH transform, attempts, successes, total_weight, mean_similarity, same_target_attempts, best_speedup,
     evidence_measurement_ids, attempt_keys, examples,
     weighted_gain / total_weight AS weighted_log_speedup,
     total_weight / (total_weight + $prior_weight) AS confidence
RETURN transform,
       weighted_log_speedup * confidence AS score,
       attempts,
       successes,
       toFloat(successes) / attempts AS success_rate,
       weighted_log_speedup,
       confidence,
       mean_similarity,
       same_target_attempts,
       attempts - same_target_attempts AS other_target_attempts,
       best_speedup,
       examples[0] AS best_example,
       [x IN examples[..5] | x.params] AS params,
       evidence_measurement_ids,
       attempt_keys[..50] AS evidence_attempt_keys
ORDER BY score DESC, attempts DESC
LIMIT $limit
