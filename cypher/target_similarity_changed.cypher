// How many of the given target similarities differ from the stored ones (a dry run of
// target_similarity_set.cypher).
// Parameters: $namespace, $rows (list of {a, b, rank_correlation, pairs}).
// Returns: changed.
// :param {namespace: 'demo', rows: [{a: 'cpu-a', b: 'cpu-b', rank_correlation: 0.8, pairs: 25}]}
UNWIND $rows AS row
OPTIONAL MATCH (:HardwareTarget {namespace: $namespace, name: row.a})-[s:TRANSFERS_LIKE]->
               (:HardwareTarget {namespace: $namespace, name: row.b})
WITH row, s
WHERE s IS NULL OR s.rank_correlation <> row.rank_correlation OR s.pairs <> row.pairs
RETURN count(row) AS changed
