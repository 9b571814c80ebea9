// The text-similarity baseline: measured states of the kernels whose *source text* is nearest,
// through the Kernel source-embedding index (all-MiniLM-L6-v2, 384-d, cosine).
// Parameters: $embedding (384 floats), $fetch_k, $k, $namespaces, $exclude_tasks (list, may be empty),
//   $transforms, $verified_only.
// Returns: measurement_id, target, task, score (cosine similarity of the sources), slots (1 + the
//   re-measurements merged into the state), best first, and frontier: the best score a kernel the index
//   did not return could have (the least it returned: an approximate search may return fewer than
//   $fetch_k from a larger index), as nearest_states_by_signature returns it.
// Within the query's vocabulary ($transforms, null: every transform): a state is a candidate only when it
// holds evidence aggregate_transforms reads for one of $transforms (not quarantined; verified with
// $verified_only), before ranking and the limit (docs/retrieval.md, "Within the query's vocabulary").
// :param embedding => [i IN range(1, 384) | 0.05]
// :param fetch_k => 200
// :param k => 20
// :param namespaces => ['demo']
// :param exclude_tasks => []
// :param transforms => ['unroll', 'vectorize']
// :param verified_only => false
CALL db.index.vector.queryNodes('kernel_source_embedding', $fetch_k, $embedding) YIELD node, score
WITH collect({kernel: node, score: score}) AS hits, min(score) AS least
WITH hits, least AS frontier
UNWIND hits AS hit
WITH frontier, hit.kernel AS k, hit.score AS score
WHERE k.namespace IN $namespaces AND NOT k.task IN $exclude_tasks
MATCH (m:Measurement)-[:OF]->(k)
WHERE m.explored AND m.merged_into IS NULL
  AND ($transforms IS NULL OR EXISTS {
    MATCH (m)-[:HAS_EVIDENCE|HAS_ROLLUP]->(e)
    WHERE e.transform IN $transforms AND e.quarantined IS NULL AND (NOT $verified_only OR e.verified)
  })
RETURN m.measurement_id AS measurement_id, m.target AS target, m.task AS task, score,
       1 + coalesce(m.merged_count, 0) AS slots, frontier
ORDER BY score DESC
LIMIT $k
