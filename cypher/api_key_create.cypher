// Store a new API key, hashed: the key itself is shown once to its owner and never stored.
// Parameters: $key_hash (sha256 hex of the key), $key_id (short public id), $role ('reader'|'writer'|'admin'),
//   $namespace, $label. Returns: key_id, role, namespace, label, created_at.
// :param {key_hash: 'ab12', key_id: 'ab12', role: 'reader', namespace: 'demo', label: 'browser'}
CREATE (k:ApiKey {key_hash: $key_hash, key_id: $key_id, role: $role, namespace: $namespace, label: $label,
                  created_at: datetime()})
RETURN k.key_id AS key_id, k.role AS role, k.namespace AS namespace, k.label AS label,
       toString(k.created_at) AS created_at
