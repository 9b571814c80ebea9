// Transforms tried from a set of neighbouring measured states, aggregated and ranked.
// It reads the per-state, per-key aggregates (StateEvidence, schemas 0006 and 0015), never the attempts.
// Each attempt made from a neighbour counts with weight = similarity x (1 on $target, else the other
// target's weight in $target_weights: its measured similarity to $target, service/target_similarity.py;
// $other_target_weight, the prior, for a target not in the map); failed attempts (no speedup) count as $failure_log_speedup.
// Evidence is heard by voice: the caller's own key and `legacy` evidence (recorded before keys were
// tracked) are one voice, each other key its own. A voice's score for a transform is its weighted gain
// / (its weight + $prior_weight); the caller's voice counts in full, every other voice as
// score / (1 + |score| / $influence_bound), the same sign and order: however many attempts another key
// records, it moves a transform's score by less than $influence_bound (docs/retrieval.md, "No writer dominates").
// With one voice this is the score as before: weighted_log_speedup x confidence, confidence = total
// weight / (total weight + $prior_weight).
// Quarantined aggregates are left out; with $verified_only, so is every unverified one.
// With $transforms (the query's vocabulary; null: every transform), so is every other transform's,
// before the ranking and $limit (docs/retrieval.md, "Within the query's vocabulary").
// Parameters: $neighbours (list of {measurement_id, score}), $namespaces, $target, $other_target_weight,
//   $target_weights (map: target name -> weight),
//   $failure_log_speedup, $prior_weight, $limit, $own_keys (the caller's key id and 'legacy'),
//   $influence_bound, $verified_only, $transforms.
// Returns: one row per transform with every score component (evidence_weight: the total weight), the
// best example, evidence ids, `by_params`: the same figures per parameter setting (best first), so
// a proposer can tell a good setting of a transform from a harmful one (with the spread of its log
// speedups and whether consolidation flagged it `disputed`), `disputed`: how many settings are,
// `verified_attempts` and `keys` (the recording keys behind it).
// :param neighbours => [{measurement_id: 'abc', score: 0.9}]
// :param namespaces => ['demo']
// :param target => 'cpu-native'
// :param other_target_weight => 0.7
// :param target_weights => {other: 0.5}
// :param failure_log_speedup => -0.1
// :param prior_weight => 1.0
// :param limit => 10
// :param own_keys => ['service', 'legacy']
// :param influence_bound => 0.1
// :param verified_only => false
// :param transforms => null
UNWIND $neighbours AS neighbour
// One aggregate (StateEvidence, or a state's rollup of them) per (neighbour, transform, setting, key):
// the attempts behind it are not walked. Its figures are what the attempts would sum to, with the
// failures' gain counted here, so $failure_log_speedup stays a query-time knob.
// A neighbour is one state. A state consolidation merged re-measurements of the same kernel into
// (MERGED_INTO) is read through its rollups (EvidenceRollup, schema 0010): per setting and key, the sum
// of its own aggregate and its duplicates', kept current by record_attempts.cypher, so it costs one
// aggregate per (state, transform, setting, key) like any state, however many re-measurements it stands
// for. Each aggregate counts times its state's `version_weight` (a superseded evaluator or signature
// counts less; absent: 1.0); a state and its duplicates share it (they are merged only with the same
// evaluator, signature version and counter source).
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
WITH m, neighbour, e
WHERE e.quarantined IS NULL AND (NOT $verified_only OR e.verified)
  AND ($transforms IS NULL OR e.transform IN $transforms)
WITH e, m.measurement_id AS state, neighbour.score AS similarity,
     CASE WHEN coalesce(e.key_id, 'legacy') IN $own_keys THEN '' ELSE e.key_id END AS voice,
     neighbour.score * coalesce(m.version_weight, 1.0) *
       CASE WHEN e.target = $target THEN 1.0
            ELSE coalesce($target_weights[e.target], $other_target_weight) END AS weight
// First per (transform, parameter setting, voice)...
WITH e.transform AS transform, e.params_json AS params, voice,
     sum(e.attempts) AS attempts,
     sum(e.successes) AS successes,
     sum(CASE WHEN e.verified THEN e.attempts ELSE 0 END) AS verified_attempts,
     collect(DISTINCT coalesce(e.key_id, 'legacy')) AS keys,
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
// ...then per (transform, voice): the voice's score (its settings best first, as the evidence lists are)...
ORDER BY transform, voice, weighted_gain / total_weight DESC
// (As weighted_log_speedup x confidence, in that order: with one voice, the very float of the score below.)
WITH transform, voice, sum(weighted_gain) AS voice_gain, sum(total_weight) AS voice_weight,
     collect({params: params, attempts: attempts, successes: successes, verified_attempts: verified_attempts,
              keys: keys, weighted_gain: weighted_gain, total_weight: total_weight,
              similarity_sum: similarity_sum, same_target_attempts: same_target_attempts,
              best_speedup: best_speedup, measurement_ids: measurement_ids, attempt_keys: attempt_keys,
              examples: examples, runs: runs, run_sum: run_sum, run_sum_sq: run_sum_sq,
              disputed: disputed}) AS parts
WITH transform, voice, parts,
     (voice_gain / voice_weight) * (voice_weight / (voice_weight + $prior_weight)) AS voice_score
// ...then per transform: the caller's voice in full, every other one bounded.
WITH transform,
     sum(CASE WHEN voice = '' THEN voice_score
              ELSE voice_score / (1.0 + abs(voice_score) / $influence_bound) END) AS score,
     reduce(all = [], group IN collect(parts) | all + group) AS parts
// The per-setting figures, over every voice (the spread over the attempts that ran: sample sd, none
// below 2 runs), best setting first.
CALL (parts) {
  UNWIND parts AS p
  WITH p.params AS params, sum(p.attempts) AS attempts, sum(p.successes) AS successes,
       sum(p.weighted_gain) AS weighted_gain, sum(p.total_weight) AS total_weight, sum(p.runs) AS runs,
       sum(p.run_sum) AS run_sum, sum(p.run_sum_sq) AS run_sum_sq, max(p.disputed) AS disputed
  WITH params, attempts, successes, weighted_gain, total_weight, disputed,
       CASE WHEN runs >= 2 THEN sqrt(CASE WHEN run_sum_sq - run_sum * run_sum / runs > 0
                                          THEN (run_sum_sq - run_sum * run_sum / runs) / (runs - 1) ELSE 0.0 END)
       END AS sd_log_speedup
  ORDER BY weighted_gain / total_weight DESC
  RETURN collect({params: params, attempts: attempts, successes: successes, weight: total_weight,
                  weighted_log_speedup: weighted_gain / total_weight, sd_log_speedup: sd_log_speedup,
                  disputed: disputed = 1}) AS by_params,
         sum(disputed) AS disputed
}
WITH transform, score, by_params, disputed,
     reduce(s = 0, p IN parts | s + p.attempts) AS attempts,
     reduce(s = 0, p IN parts | s + p.successes) AS successes,
     reduce(s = 0, p IN parts | s + p.verified_attempts) AS verified_attempts,
     reduce(ks = [], p IN parts | ks + [k IN p.keys WHERE NOT k IN ks]) AS keys,
     reduce(s = 0.0, p IN parts | s + p.weighted_gain) AS weighted_gain,
     reduce(s = 0.0, p IN parts | s + p.total_weight) AS total_weight,
     reduce(s = 0.0, p IN parts | s + p.similarity_sum) AS similarity_sum,
     reduce(s = 0, p IN parts | s + p.same_target_attempts) AS same_target_attempts,
     reduce(b = null, p IN parts | CASE WHEN b IS NULL OR p.best_speedup > b THEN p.best_speedup ELSE b END)
       AS best_speedup,
     reduce(ids = [], p IN parts | ids + [i IN p.measurement_ids WHERE NOT i IN ids]) AS evidence_measurement_ids,
     reduce(keys = [], p IN parts | keys + p.attempt_keys) AS attempt_keys,
     reduce(best = null, p IN parts |
       reduce(b = best, x IN p.examples | CASE WHEN b IS NULL OR x.gain > b.gain THEN x ELSE b END)) AS best_example
WITH transform, score, by_params, disputed, attempts, successes, verified_attempts, keys, total_weight,
     similarity_sum / attempts AS mean_similarity, same_target_attempts, best_speedup,
     evidence_measurement_ids, attempt_keys, best_example,
     weighted_gain / total_weight AS weighted_log_speedup,
     total_weight / (total_weight + $prior_weight) AS confidence
RETURN transform,
       score,
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
       disputed,
       verified_attempts,
       keys
ORDER BY score DESC, attempts DESC
LIMIT $limit
