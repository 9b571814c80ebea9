// Hardware targets by name within the given namespaces.
// Parameters: $namespaces (list), $names (list). Returns: one map per target.
// :param {namespaces: ['demo'], names: ['cpu-native']}
MATCH (h:HardwareTarget)
WHERE h.namespace IN $namespaces AND h.name IN $names
RETURN h {.*, updated_at: toString(h.updated_at)} AS target
