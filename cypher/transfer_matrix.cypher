// The transfer matrix at a glance, for Neo4j Browser: for every ordered pair of targets, how many
// (transform, kernel) effects were measured on both, the Pearson correlation of their log speedups
// and how often they agree on "helps / hurts". `kernelgraph transfer --matrix` reports the rank
// (Spearman) correlation with a bootstrap CI from transfer_gains.cypher; this is its Browser view.
// Parameters: $namespaces (list), $transform (a transform name, or null for all), $min_pairs.
// Returns: source, destination, pairs, correlation, agreement, mean_gain_source, mean_gain_destination.
// :param namespaces => ['kb']
// :param transform => null
// :param min_pairs => 20
MATCH (a1:Attempt)-[:FROM]->(k:Kernel)
WHERE a1.namespace IN $namespaces AND a1.log_speedup IS NOT NULL
  AND ($transform IS NULL OR a1.transform = $transform)
MATCH (a2:Attempt)-[:FROM]->(:Kernel {kernel_id: k.kernel_id})
WHERE a2.namespace IN $namespaces AND a2.log_speedup IS NOT NULL AND a2.target <> a1.target
  AND a2.transform = a1.transform AND a2.params_json = a1.params_json
WITH a1.target AS source, a2.target AS destination, a1.log_speedup AS x, a2.log_speedup AS y
WITH source, destination, count(*) AS pairs, avg(x) AS mx, avg(y) AS my,
     collect([x, y]) AS xy,
     sum(CASE WHEN (x > 0) = (y > 0) THEN 1 ELSE 0 END) AS agree
WHERE pairs >= $min_pairs
WITH source, destination, pairs, mx, my, agree,
     reduce(s = [0.0, 0.0, 0.0], p IN xy |
       [s[0] + (p[0] - mx) * (p[1] - my), s[1] + (p[0] - mx) ^ 2, s[2] + (p[1] - my) ^ 2]) AS sums
RETURN source, destination, pairs,
       CASE WHEN sums[1] > 0 AND sums[2] > 0 THEN sums[0] / sqrt(sums[1] * sums[2]) END AS correlation,
       toFloat(agree) / pairs AS agreement, mx AS mean_gain_source, my AS mean_gain_destination
ORDER BY source, destination
