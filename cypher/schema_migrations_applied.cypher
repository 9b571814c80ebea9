// Schema migrations already applied to this database.
// Parameters: none. Returns: version, name, applied_at, one row per applied migration.
// :param {}
MATCH (m:SchemaMigration)
RETURN m.version AS version, m.name AS name, m.applied_at AS applied_at
ORDER BY version
