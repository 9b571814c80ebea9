// Rollups of merged states (docs/retrieval.md, "Consolidation"): a state consolidation merged
// re-measurements of the same kernel into (MERGED_INTO, schema 0009) gets one (:EvidenceRollup) per
// transform and parameter setting, (state)-[:HAS_ROLLUP]->(rollup), with StateEvidence's properties:
// the sums of the state's own aggregate and its duplicates' (min, max and best over them), so that
// retrieval reads one aggregate per (state, transform, setting) instead of walking every duplicate.
// Members carry `rollup_into` and summed aggregates `rollup_of` (the state's id); record_attempts keeps
// the rollup current. Keyed like StateEvidence on (namespace, measurement_id, transform, params_json),
// measurement_id being the state's.
// After these statements, service/migrate.py rolls up every state merged by earlier code
// (service/consolidation.py roll_up_merged_states); until then such a state answers with its own
// aggregates only, so apply it before the service takes reads (`kernelgraph schema apply` at deploy).
CREATE CONSTRAINT evidence_rollup_key IF NOT EXISTS
FOR (n:EvidenceRollup) REQUIRE (n.namespace, n.measurement_id, n.transform, n.params_json) IS UNIQUE;
