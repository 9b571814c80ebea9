// The graph view of flagged contradictions: each Contradiction with the state it is about, the
// transform, and the attempts that disagree with the kernels they produced (Browser draws it).
// Parameters: $namespaces, $limit (contradictions).
// Returns: paths.
// :param namespaces => ['demo']
// :param limit => 5
MATCH (x:Contradiction)
WHERE x.namespace IN $namespaces AND x.status = 'open'
WITH x ORDER BY x.attempts DESC LIMIT $limit
MATCH about = (x)-[:ABOUT]->(:Measurement)
MATCH involves = (x)-[:INVOLVES]->(:Attempt)-[:PRODUCED]->(:Kernel)
OPTIONAL MATCH transform = (x)-[:OF_TRANSFORM]->(:Transform)
RETURN about, involves, transform
