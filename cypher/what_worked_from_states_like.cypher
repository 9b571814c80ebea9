// "What worked from states like mine", keyed on a measurement id or a kernel id instead of a hand-built
// signature: that measurement's stored signature is the query; the $k nearest explored states (compared
// as retrieval compares them: on every dimension a state measured, all of which the query measured, at
// least $min_shared; docs/retrieval.md) and what each transform did from them. A Browser view: evidence
// is weighed by similarity only (the service's retrieval also weighs targets, versions and merges).
// Parameters: $namespaces, $measurement_id (or null), $kernel_id (used when measurement_id is null: its
//   latest measurement, on $target when given), $target (or null), $k, $min_shared, $limit.
// Returns: transform, attempts, kept, success_rate, mean_log_speedup (similarity-weighted, timed
//   attempts), best_speedup, states, mean_similarity, example_attempt_key (the fastest attempt behind
//   it); the best mean first.
// :param namespaces => ['tour']
// :param measurement_id => null
// :param kernel_id => null
// :param target => 'h100-sm90'
// :param k => 20
// :param min_shared => 3
// :param limit => 10
MATCH (q:Measurement)
WHERE q.namespace IN $namespaces AND size(q.signature_dims) > 0
  AND CASE WHEN $measurement_id IS NOT NULL THEN q.measurement_id = $measurement_id
           WHEN $kernel_id IS NOT NULL THEN q.kernel_id = $kernel_id AND ($target IS NULL OR q.target = $target)
           ELSE q.explored = true AND ($target IS NULL OR q.target = $target) END
WITH q ORDER BY q.taken_at DESC, q.measurement_id LIMIT 1
MATCH (m:Measurement)
USING INDEX m:Measurement(namespace, explored)
WHERE m.namespace IN $namespaces AND m.explored = true AND m.merged_into IS NULL
WITH q, m, m.signature_dims AS own
WHERE size(own) >= CASE WHEN size(q.signature_dims) < $min_shared THEN size(q.signature_dims) ELSE $min_shared END
  AND all(i IN own WHERE i IN q.signature_dims)
WITH m, 1.0 / (1.0 + reduce(d2 = 0.0, i IN own | d2 + (m.signature[i] - q.signature[i]) ^ 2)
                      * size(q.signature) / size(own)) AS similarity
ORDER BY similarity DESC, m.measurement_id
LIMIT $k
MATCH (m)-[:HAS_EVIDENCE]->(e:StateEvidence)
WITH m, similarity, e ORDER BY coalesce(e.best_speedup, 0.0) DESC, e.best_attempt_key
WITH e.transform AS transform, sum(e.attempts) AS attempts, sum(e.successes) AS kept,
     sum(similarity * e.sum_log_speedup) AS weighted_gain, sum(similarity * e.runtime_attempts) AS weighted_runs,
     max(e.best_speedup) AS best_speedup, count(DISTINCT m) AS states, avg(similarity) AS mean_similarity,
     collect(e.best_attempt_key)[0] AS example_attempt_key
RETURN transform, attempts, kept, toFloat(kept) / attempts AS success_rate,
       CASE WHEN weighted_runs > 0 THEN weighted_gain / weighted_runs ELSE null END AS mean_log_speedup,
       best_speedup, states, mean_similarity, example_attempt_key
ORDER BY mean_log_speedup DESC, kept DESC, transform
LIMIT $limit
