// Every hardware target in the given namespaces, with how much experience each holds.
// Parameters: $namespaces (list). Returns: target (map), measurements, attempts.
// :param {namespaces: ['demo']}
MATCH (h:HardwareTarget)
WHERE h.namespace IN $namespaces
OPTIONAL CALL (h) {
  MATCH (m:Measurement)-[:ON]->(h)
  RETURN count(m) AS measurements
}
OPTIONAL CALL (h) {
  MATCH (a:Attempt)-[:ON_TARGET]->(h)
  RETURN count(a) AS attempts
}
RETURN h {.*, updated_at: toString(h.updated_at)} AS target, measurements, attempts
ORDER BY h.namespace, h.name
