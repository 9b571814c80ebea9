// Every API key (never the key or its hash): what `kernelgraph keys list` shows.
// Parameters: none. Returns: key_id, role, namespace, label, created_at, revoked_at (null while it works).
// :param {}
MATCH (k:ApiKey)
RETURN k.key_id AS key_id, k.role AS role, k.namespace AS namespace, k.label AS label,
       toString(k.created_at) AS created_at, toString(k.revoked_at) AS revoked_at
ORDER BY k.namespace, k.created_at
