// How many explored measured states the namespaces hold (decides exact versus index search).
// Parameters: $namespaces. Returns: states.
// :param {namespaces: ['demo']}
MATCH (m:Measurement)
WHERE m.namespace IN $namespaces AND m.explored
RETURN count(m) AS states
