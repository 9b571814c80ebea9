// Consolidation, dry run: how many measurements no attempt started from still sit in the vector index
// (cypher/consolidation_park_measurements.cypher would park them).
// Parameters: $namespace.
// Returns: parkable.
// :param namespace => 'demo'
MATCH (m:Measurement {namespace: $namespace})
WHERE m.explored IS NULL AND m.signature IS NOT NULL
RETURN count(m) AS parkable
