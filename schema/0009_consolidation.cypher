// Consolidation (`kernelgraph consolidate`, service/consolidation.py; docs/retrieval.md): contradictions
// flagged for re-measurement are (:Contradiction) nodes keyed on (namespace, contradiction_id), linked to
// their state (ABOUT), transform (OF_TRANSFORM) and attempts (INVOLVES). Re-measurements of one kernel
// merged into one state keep everything and gain (dup)-[:MERGED_INTO]->(state) and `merged_into`; states
// measured by a superseded evaluator or signature version gain a `version_weight`. Nothing is rewritten
// here: an upgraded graph answers as before until `kernelgraph consolidate` runs on it.
CREATE CONSTRAINT contradiction_key IF NOT EXISTS
FOR (n:Contradiction) REQUIRE (n.namespace, n.contradiction_id) IS UNIQUE;
CREATE INDEX contradiction_status IF NOT EXISTS FOR (n:Contradiction) ON (n.namespace, n.status);
