// How many explored measured states the namespaces hold, counting at most $limit (the caller only
// needs to know whether exact scoring is cheap; an unbounded count would cost O(graph) per query).
// Parameters: $namespaces, $limit. Returns: states (<= $limit).
// :param namespaces => ['demo']
// :param limit => 1001
MATCH (m:Measurement)
USING INDEX m:Measurement(namespace, explored)
WHERE m.namespace IN $namespaces AND m.explored = true
WITH m LIMIT $limit
RETURN count(m) AS states
