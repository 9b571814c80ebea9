// Consolidation: merge re-measurements of one kernel into one state. The duplicate stays (nothing is
// deleted; its attempts, aggregates and lineage keep answering), gains (dup)-[:MERGED_INTO]->(state)
// and `merged_into`, and leaves neighbour search; retrieval reads its aggregates through the state,
// which counts for `merged_count` + 1 measurements in neighbour search (cypher/nearest_states_*).
// Idempotent and safe beside concurrent writers: a duplicate already merged, or a state that was
// merged itself meanwhile, is left alone.
// Parameters: $namespace, $rows (list of {duplicate, canonical}: measurement ids).
// Returns: merged (how many duplicates this call merged).
// :param namespace => 'demo'
// :param rows => [{duplicate: 'abc', canonical: 'abd'}]
UNWIND $rows AS row
MATCH (d:Measurement {namespace: $namespace, measurement_id: row.duplicate})
MATCH (c:Measurement {namespace: $namespace, measurement_id: row.canonical})
WITH d, c
// No chains: a state others were merged into is not merged itself (retrieval reads one hop).
WHERE d <> c AND d.merged_into IS NULL AND c.merged_into IS NULL
  AND NOT EXISTS { (:Measurement)-[:MERGED_INTO]->(d) }
MERGE (d)-[:MERGED_INTO]->(c)
// The duplicate's signature moves to `merged_signature` and its per-source vector (signature_<source>,
// what the source's vector index holds; signature version 2) goes: it leaves the vector indexes, so
// their candidates are distinct states. The signature is kept (with signature_dims and
// signature_complete, which describe it, not index membership) and still shown by
// cypher/attempt_evidence.cypher; the per-source vector is its values on signature_dims.
SET d.merged_into = c.measurement_id, d.merged_at = datetime(), d.merged_signature = d.signature
REMOVE d.signature, d['signature_' + coalesce(d.counter_source, '')]
WITH c, count(d) AS merged
// How many measurements the state now stands for: neighbour search counts it as that many slots.
SET c.merged_count = COUNT { (:Measurement)-[:MERGED_INTO]->(c) }
RETURN sum(merged) AS merged
