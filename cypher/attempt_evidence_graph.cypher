// The evidence behind a recommendation, as a graph for Neo4j Browser: each attempt (the
// `evidence_attempt_keys` of a retrieval) with its parent and child kernels, transform, target
// and the measured states it started from and resulted in. attempt_evidence.cypher gives rows.
// Parameters: $namespaces, $attempt_keys (list).
// Returns: path, one per relationship of each attempt.
// :param {namespaces: ['demo'], attempt_keys: ['browser:1']}
UNWIND $attempt_keys AS key
MATCH (a:Attempt {attempt_key: key})
WHERE a.namespace IN $namespaces
MATCH path = (a)-[:FROM|PRODUCED|APPLIED|ON_TARGET|FROM_STATE|RESULTED_IN]->()
RETURN path
