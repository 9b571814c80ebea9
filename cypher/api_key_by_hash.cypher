// The API key with this hash, for authenticating a request (the uniqueness constraint indexes key_hash).
// Parameters: $key_hash (sha256 hex of the presented key). Returns: key_id, role, namespace, label; or no
// row (an unknown or revoked key).
// :param {key_hash: 'ab12'}
MATCH (k:ApiKey {key_hash: $key_hash})
WHERE k.revoked_at IS NULL
RETURN k.key_id AS key_id, k.role AS role, k.namespace AS namespace, k.label AS label
