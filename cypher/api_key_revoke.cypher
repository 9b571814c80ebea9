// Revoke an API key: it stays listed (with `revoked_at`) for the audit trail, but no longer authenticates.
// Parameters: $key_id. Returns: key_id, namespace, revoked_at (the first revocation's time); no row when
// no key has this id.
// :param {key_id: 'ab12cd34ef56'}
MATCH (k:ApiKey {key_id: $key_id})
SET k.revoked_at = coalesce(k.revoked_at, datetime())
RETURN k.key_id AS key_id, k.namespace AS namespace, toString(k.revoked_at) AS revoked_at
