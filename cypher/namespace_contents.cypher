// What a namespace holds, per label: its nodes and the relationships leaving them (each relationship
// counted once, from its start node). The dry run of deleting a namespace.
// Parameters: $namespace. Returns: label, nodes, relationships (one row per label).
// :param namespace => 'demo'
MATCH (n)
WHERE n.namespace = $namespace
OPTIONAL MATCH (n)-[r]->()
RETURN labels(n)[0] AS label, count(DISTINCT n) AS nodes, count(r) AS relationships
ORDER BY label
