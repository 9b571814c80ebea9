// Every other target of the namespaces with its measured similarity to $target (stored by
// consolidation, target_similarity_set.cypher): the rank correlation and the pairs it rests on. Over
// several namespaces a target's measurements are pooled, each correlation weighted by its pairs;
// pairs 0 and rank_correlation null: never measured (retrieval then weighs it by the prior).
// Parameters: $namespaces, $target.
// Returns: target, rank_correlation, pairs, measured_at (the latest, as a string).
// :param {namespaces: ['demo'], target: 'cpu-native'}
MATCH (t:HardwareTarget)
WHERE t.namespace IN $namespaces AND t.name <> $target
OPTIONAL MATCH (t)-[s:TRANSFERS_LIKE]-(:HardwareTarget {namespace: t.namespace, name: $target})
WITH t.name AS target, collect(s) AS measured
WITH target, measured, reduce(n = 0, s IN measured | n + s.pairs) AS pairs
RETURN target,
       CASE WHEN pairs > 0 THEN reduce(x = 0.0, s IN measured | x + s.rank_correlation * s.pairs) / pairs END
         AS rank_correlation,
       pairs,
       toString(reduce(m = null, s IN measured | CASE WHEN m IS NULL OR s.measured_at > m THEN s.measured_at ELSE m END))
         AS measured_at
ORDER BY target
