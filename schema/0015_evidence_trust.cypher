// Evidence trust (docs/api.md, "Who vouches for evidence"; docs/graph-model.md). Every attempt now says
// which API key recorded it (`recorded_by`: a key id, or `service` for the service's own in-process
// evaluator) and whether that recorder is one the operator trusts (`verified`); it carries the hash of
// its content (`content_hash`, so a reused attempt key with other content is refused) and, when its
// times beat the target's peaks for its declared work, `implausible` (never aggregated as evidence).
// Aggregates are kept per key: StateEvidence and EvidenceRollup gain `key_id` (and `verified`) in
// their natural key, so that one key's evidence can be bounded in another key's retrieval and
// quarantined (`quarantined`) without touching anyone else's.
// What earlier releases stored was recorded before keys were tracked: it gets key `legacy`, unverified.
// Its attempts have no content hash; replaying one of their keys stays an idempotent replay.
MATCH (e:StateEvidence) WHERE e.key_id IS NULL
CALL (e) { SET e.key_id = 'legacy', e.verified = false } IN TRANSACTIONS OF 5000 ROWS;
MATCH (r:EvidenceRollup) WHERE r.key_id IS NULL
CALL (r) { SET r.key_id = 'legacy', r.verified = false } IN TRANSACTIONS OF 5000 ROWS;
MATCH (a:Attempt) WHERE a.recorded_by IS NULL
CALL (a) { SET a.recorded_by = 'legacy', a.verified = false } IN TRANSACTIONS OF 5000 ROWS;
DROP CONSTRAINT state_evidence_key IF EXISTS;
CREATE CONSTRAINT state_evidence_key_per_recorder IF NOT EXISTS
FOR (n:StateEvidence) REQUIRE (n.namespace, n.measurement_id, n.transform, n.params_json, n.key_id) IS UNIQUE;
DROP CONSTRAINT evidence_rollup_key IF EXISTS;
CREATE CONSTRAINT evidence_rollup_key_per_recorder IF NOT EXISTS
FOR (n:EvidenceRollup) REQUIRE (n.namespace, n.measurement_id, n.transform, n.params_json, n.key_id) IS UNIQUE;
// Quarantine and the suspicious-evidence query find one key's aggregates and attempts.
CREATE INDEX state_evidence_recorder IF NOT EXISTS FOR (n:StateEvidence) ON (n.namespace, n.key_id);
CREATE INDEX evidence_rollup_recorder IF NOT EXISTS FOR (n:EvidenceRollup) ON (n.namespace, n.key_id);
CREATE INDEX attempt_recorder IF NOT EXISTS FOR (n:Attempt) ON (n.namespace, n.recorded_by);
