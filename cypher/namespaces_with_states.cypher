// Every namespace that holds measured states (what a scheduled consolidation visits).
// Parameters: none.
// Returns: namespace.
// :param {}
MATCH (m:Measurement)
WHERE m.explored
RETURN DISTINCT m.namespace AS namespace
ORDER BY namespace
