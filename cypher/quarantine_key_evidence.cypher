// Quarantine (or, with $release, release) the evidence one API key recorded in a namespace: its
// per-key aggregates (StateEvidence, EvidenceRollup; schema 0015) and attempts get `quarantined`, and
// retrieval and consolidation leave them out; releasing removes the mark, so nothing is lost. Without
// $apply it only counts what it would change (the dry run an operator looks at first).
// Parameters: $namespace, $key_id, $apply (bool), $release (bool).
// Returns: aggregates, rollups, attempts (how many would change, or changed), transforms (theirs, sorted).
// :param {namespace: 'demo', key_id: 'ab12cd34ef56', apply: false, release: false}
CALL () {
  MATCH (e:StateEvidence {namespace: $namespace, key_id: $key_id})
  WHERE (e.quarantined IS NULL) <> $release
  FOREACH (_ IN CASE WHEN $apply THEN [1] ELSE [] END |
    SET e.quarantined = CASE WHEN $release THEN null ELSE true END)
  RETURN count(e) AS aggregates, collect(DISTINCT e.transform) AS transforms
}
CALL () {
  MATCH (r:EvidenceRollup {namespace: $namespace, key_id: $key_id})
  WHERE (r.quarantined IS NULL) <> $release
  FOREACH (_ IN CASE WHEN $apply THEN [1] ELSE [] END |
    SET r.quarantined = CASE WHEN $release THEN null ELSE true END)
  RETURN count(r) AS rollups
}
CALL () {
  MATCH (a:Attempt {namespace: $namespace, recorded_by: $key_id})
  WHERE (a.quarantined IS NULL) <> $release
  FOREACH (_ IN CASE WHEN $apply THEN [1] ELSE [] END |
    SET a.quarantined = CASE WHEN $release THEN null ELSE true END)
  RETURN count(a) AS attempts
}
RETURN aggregates, rollups, attempts, [t IN transforms | t] AS transforms
