// Store the measured similarity of pairs of targets of one namespace (service/target_similarity.py):
// the transfer matrix's rank correlation and the number of (transform, kernel) pairs it rests on, on
// one (:HardwareTarget)-[:TRANSFERS_LIKE]->(:HardwareTarget) per pair (a.name < b.name; Spearman is
// symmetric), with when it was measured. Writes only what changed: a second run writes nothing.
// Parameters: $namespace, $rows (list of {a, b, rank_correlation, pairs}).
// Returns: changed.
// :param {namespace: 'demo', rows: [{a: 'cpu-a', b: 'cpu-b', rank_correlation: 0.8, pairs: 25}]}
UNWIND $rows AS row
MATCH (a:HardwareTarget {namespace: $namespace, name: row.a})
MATCH (b:HardwareTarget {namespace: $namespace, name: row.b})
MERGE (a)-[s:TRANSFERS_LIKE]->(b)
WITH s, row
WHERE s.rank_correlation IS NULL OR s.rank_correlation <> row.rank_correlation OR s.pairs <> row.pairs
SET s.rank_correlation = row.rank_correlation, s.pairs = row.pairs, s.measured_at = datetime()
RETURN count(s) AS changed
