// Consolidation: measurements no attempt started from (children, measurements recorded alone) are
// not candidates for neighbour search, yet fill the vector indexes around the states that are (about
// 20 children per explored state in a grown graph). Their signature moves to `parked_signature` and
// their per-source vector (signature_<source>, what the source's vector index holds; signature
// version 2) goes, out of the index; recording an attempt from one restores both
// (cypher/record_attempts.cypher: the per-source vector is the signature's values on signature_dims
// when signature_complete), so a state explored later is found as before. Nothing is deleted.
// The first SET takes the node's write lock before `explored` is read again, so an attempt that
// explores it concurrently either comes first (and it is skipped) or restores it afterwards.
// Parameters: $namespace, $limit (at most this many per call), $no_source_vectors (every per-source
//   vector property -> null: service/recording.py NO_SOURCE_VECTORS).
// Returns: parked.
// :param namespace => 'demo'
// :param limit => 1000
// :param no_source_vectors => {signature_cpu_cachegrind: null, signature_cpu_timing: null, signature_nvidia_ncu: null, signature_nvidia_timing: null, signature_nvidia_static: null, signature_kernelbench_timing: null}
MATCH (m:Measurement {namespace: $namespace})
WHERE m.explored IS NULL AND m.signature IS NOT NULL
WITH m LIMIT $limit
SET m.parked_at = datetime()
WITH m
WHERE m.explored IS NULL
SET m.parked_signature = m.signature
REMOVE m.signature
SET m += $no_source_vectors
RETURN count(m) AS parked
