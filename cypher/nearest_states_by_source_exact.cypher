// Nearest measured states by source text, scoring every embedded kernel exactly (no index): used
// while the namespaces hold few explored states, as counters retrieval does, so that the text and
// counter baselines search the same way with the same k.
// States that consolidation merged into another are read through that one (cypher/aggregate_transforms),
// not scored themselves.
// Parameters: $embedding (list of floats), $k, $namespaces, $exclude_tasks (list, may be empty),
//   $transforms, $verified_only.
// Returns: measurement_id, target, task, score (cosine similarity mapped to [0, 1]), slots (1 + the
//   re-measurements merged into the state), best first.
// Within the query's vocabulary ($transforms, null: every transform): a state is a candidate only when it
// holds evidence aggregate_transforms reads for one of $transforms (not quarantined; verified with
// $verified_only), before ranking and the limit (docs/retrieval.md, "Within the query's vocabulary").
// :param embedding => [0.1, 0.2]
// :param k => 20
// :param namespaces => ['demo']
// :param exclude_tasks => []
// :param transforms => ['unroll', 'vectorize']
// :param verified_only => false
MATCH (m:Measurement)-[:OF]->(k:Kernel)
USING INDEX m:Measurement(namespace, explored)
WHERE m.namespace IN $namespaces AND m.explored = true AND m.merged_into IS NULL AND NOT m.task IN $exclude_tasks
  AND k.source_embedding IS NOT NULL
  AND ($transforms IS NULL OR EXISTS {
    MATCH (m)-[:HAS_EVIDENCE|HAS_ROLLUP]->(e)
    WHERE e.transform IN $transforms AND e.quarantined IS NULL AND (NOT $verified_only OR e.verified)
  })
WITH m, vector.similarity.cosine(k.source_embedding, $embedding) AS score
RETURN m.measurement_id AS measurement_id, m.target AS target, m.task AS task, score,
       1 + coalesce(m.merged_count, 0) AS slots
ORDER BY score DESC, measurement_id
LIMIT $k
