// Nearest measured states to a counter signature through the per-source vector indexes (approximate).
// Each counter source has its own index (measurement_signature_<source>) over the values of its
// complete measurements on the source's dimensions, each divided by the source's scale for it
// (m.signature_<source>, signature 4), so masking costs no index:
// the query is projected onto each source it can be compared with and scaled alike ($searches, built by
// core/signature.py index_searches) and the index's squared distance is turned into the similarity's
// units (x d2_factor = 1 / (shared x unit^2), the index's source's unit), as the exact query does.
// Over-fetches $fetch_k candidates per index, then keeps states in $namespaces that attempts were made
// from (m.explored) and that consolidation did not merge into another (a re-measurement of the same
// kernel: retrieval reads it through the state it was merged into; consolidation also takes its
// per-source vector out of the index), leaving out $exclude_tasks.
// Parameters: $searches (list of {index, vector, d2_factor}), $fetch_k, $k, $namespaces, $exclude_tasks,
//   $transforms, $verified_only.
// Returns: measurement_id, target, task, score (1 / (1 + d^2 / (shared x unit^2))), slots (1 + the
//   re-measurements merged into the state), best first, and frontier: the best score a state the indexes
//   did not return could have (the least score any search returned: an approximate search may return
//   fewer than $fetch_k from a larger index, so a short one does not prove the index exhausted), the
//   same on every row. Other namespaces' states take index candidates too, and so does each other
//   search: the rows are the true nearest only when the k-th scores at least the frontier; the service
//   fetches more until they do (service/retrieval.py, `search_index`).
// Within the query's vocabulary ($transforms, null: every transform): a state is a candidate only when it
// holds evidence aggregate_transforms reads for one of $transforms (not quarantined; verified with
// $verified_only), before ranking and the limit (docs/retrieval.md, "Within the query's vocabulary").
// :param searches => [{index: 'measurement_signature_cpu_timing', vector: [2.3, 1.2, 2.7, 0.0], d2_factor: 0.25}]
// :param fetch_k => 200
// :param k => 20
// :param namespaces => ['demo']
// :param exclude_tasks => []
// :param transforms => ['unroll', 'vectorize']
// :param verified_only => false
UNWIND $searches AS search
CALL db.index.vector.queryNodes(search.index, $fetch_k, search.vector) YIELD node, score AS raw
WITH search, node, 1.0 / (1.0 + (1.0 / raw - 1.0) * search.d2_factor) AS score
WITH search, collect({node: node, score: score}) AS hits, min(score) AS least
WITH collect({hits: hits, frontier: least}) AS found
WITH found, reduce(f = 0.0, s IN found | CASE WHEN s.frontier > f THEN s.frontier ELSE f END) AS frontier
UNWIND found AS s
UNWIND s.hits AS hit
WITH frontier, hit.node AS m, hit.score AS score
WHERE m.namespace IN $namespaces AND m.explored AND m.merged_into IS NULL AND NOT m.task IN $exclude_tasks
  AND ($transforms IS NULL OR EXISTS {
    MATCH (m)-[:HAS_EVIDENCE|HAS_ROLLUP]->(e)
    WHERE e.transform IN $transforms AND e.quarantined IS NULL AND (NOT $verified_only OR e.verified)
  })
RETURN m.measurement_id AS measurement_id, m.target AS target, m.task AS task, score,
       1 + coalesce(m.merged_count, 0) AS slots, frontier
ORDER BY score DESC, measurement_id
LIMIT $k
