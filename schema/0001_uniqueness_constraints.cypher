// Natural keys of every node type. Community Edition has only IS UNIQUE, and MERGE is race-free
// only on a constrained key, so every MERGE in cypher/ goes through one of these.
CREATE CONSTRAINT hardware_target_key IF NOT EXISTS FOR (n:HardwareTarget) REQUIRE (n.namespace, n.name) IS UNIQUE;
CREATE CONSTRAINT kernel_key IF NOT EXISTS FOR (n:Kernel) REQUIRE (n.namespace, n.kernel_id) IS UNIQUE;
CREATE CONSTRAINT access_pattern_key IF NOT EXISTS FOR (n:AccessPattern) REQUIRE (n.namespace, n.name) IS UNIQUE;
CREATE CONSTRAINT transform_key IF NOT EXISTS FOR (n:Transform) REQUIRE (n.namespace, n.name) IS UNIQUE;
CREATE CONSTRAINT measurement_key IF NOT EXISTS FOR (n:Measurement) REQUIRE (n.namespace, n.measurement_id) IS UNIQUE;
CREATE CONSTRAINT attempt_key IF NOT EXISTS FOR (n:Attempt) REQUIRE (n.namespace, n.attempt_key) IS UNIQUE;
CREATE CONSTRAINT api_key_hash IF NOT EXISTS FOR (n:ApiKey) REQUIRE n.key_hash IS UNIQUE;
CREATE CONSTRAINT schema_migration_version IF NOT EXISTS FOR (n:SchemaMigration) REQUIRE n.version IS UNIQUE;
