// Consolidation: the open contradictions of a namespace and their fingerprints (to tell new from known).
// Parameters: $namespace.
// Returns: contradiction_id, fingerprint.
// :param namespace => 'demo'
MATCH (x:Contradiction {namespace: $namespace})
WHERE x.status = 'open'
RETURN x.contradiction_id AS contradiction_id, x.fingerprint AS fingerprint
