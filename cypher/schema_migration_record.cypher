// Record one applied schema migration (idempotent: MERGE on the version).
// Parameters: $version (int), $name (string). Returns: version.
// :param version => 1
// :param name => '0001_uniqueness_constraints'
MERGE (m:SchemaMigration {version: $version})
ON CREATE SET m.name = $name, m.applied_at = datetime()
RETURN m.version AS version
