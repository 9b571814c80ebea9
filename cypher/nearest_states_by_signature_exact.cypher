// Nearest measured states to a counter signature by exact scoring (masked, scaled: signature version 4).
// Used for small namespaces (every explored state) and, on large ones, for the states whose signature
// is incomplete for their counter source (kept out of the per-source vector indexes). States that
// consolidation merged into another are read through that one, not scored.
// A state is compared on every dimension it measured (m.signature_dims); it is a neighbour only when the
// query measured all of them ($measured) and they are at least $min_shared. The squared distance over
// them, each difference divided by the state's source scale for its dimension ($source_scales, as the
// per-source vector indexes hold the states), is divided by shared x unit^2, the state's source's
// similarity unit ($source_units; a state without one: 1 / the signature's length, as for the sources
// nothing judged), never filled in with a neutral value.
// Parameters: $signature (the query, 0.0 where not measured), $measured (indexes of its measured
// dimensions), $min_shared, $k, $namespaces, $exclude_tasks,
// $complete ([true, false] for every state, [false] for the incomplete ones only), $transforms, $verified_only,
// $source_scales (each counter source's scale per dimension, core/signature.py SOURCE_SCALES_PARAM),
// $source_units (each counter source's similarity unit, core/signature.py SOURCE_UNITS_PARAM).
// Returns: measurement_id, target, task, score (1 / (1 + d^2 / (shared x unit^2))), slots (1 + the
//   re-measurements merged into the state), best first.
// Within the query's vocabulary ($transforms, null: every transform): a state is a candidate only when it
// holds evidence aggregate_transforms reads for one of $transforms (not quarantined; verified with
// $verified_only), before ranking and the limit (docs/retrieval.md, "Within the query's vocabulary").
// :param signature => [0.1, 0.8, 0.3, 0.2, 0.1, 0.5, 0.1, 0.0, 0.0, 0.0, 0.8]
// :param measured => [0, 1, 2, 3, 4, 5, 6, 9, 10]
// :param min_shared => 3
// :param k => 20
// :param namespaces => ['demo']
// :param exclude_tasks => []
// :param complete => [true, false]
// :param transforms => ['unroll', 'vectorize']
// :param verified_only => false
// :param source_scales => {cpu_cachegrind: [0.04411, 0.1157, 0.04008, 0.04005, 0.08597, 0.1858, 0.03638, 1.0, 1.0, 0.05575, 1.0], cpu_timing: [0.04411, 0.1157, 0.04008, 0.04005, 0.08597, 0.1858, 0.03638, 1.0, 1.0, 0.05575, 1.0], nvidia_ncu: [1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0], nvidia_timing: [1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0], nvidia_static: [1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0], kernelbench_timing: [1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0]}
// :param source_units => {cpu_cachegrind: 1.0, cpu_timing: 1.0, nvidia_ncu: 0.30151134457776363, nvidia_timing: 0.30151134457776363, nvidia_static: 0.30151134457776363, kernelbench_timing: 0.30151134457776363}
// The (namespace, explored, signature_complete) index (schema 0013) holds states only, by completeness:
// a large namespace's few incomplete states are read without reading its complete ones, and no child
// measurement is ever read.
MATCH (m:Measurement)
USING INDEX m:Measurement(namespace, explored, signature_complete)
WHERE m.namespace IN $namespaces AND m.explored = true AND m.signature_complete IN $complete
  AND m.merged_into IS NULL AND NOT m.task IN $exclude_tasks
  AND ($transforms IS NULL OR EXISTS {
    MATCH (m)-[:HAS_EVIDENCE|HAS_ROLLUP]->(e)
    WHERE e.transform IN $transforms AND e.quarantined IS NULL AND (NOT $verified_only OR e.verified)
  })
WITH m, m.signature_dims AS own
WHERE size(own) >= $min_shared AND all(i IN own WHERE i IN $measured)
WITH m, size(own) AS shared,
     reduce(d2 = 0.0, i IN own |
            d2 + ((m.signature[i] - $signature[i]) / coalesce($source_scales[m.counter_source][i], 1.0)) ^ 2) AS d2
WITH m, 1.0 / (1.0 + d2 / (shared * coalesce($source_units[m.counter_source], sqrt(1.0 / size($signature))) ^ 2)) AS score
RETURN m.measurement_id AS measurement_id, m.target AS target, m.task AS task, score,
       1 + coalesce(m.merged_count, 0) AS slots
ORDER BY score DESC, measurement_id
LIMIT $k
