// Consolidation: contradictions whose group no longer disagrees (its evidence was re-weighed or
// re-grouped) are kept but marked resolved, and their aggregates (and rollup) no longer disputed.
// Parameters: $namespace, $ids (contradiction ids to resolve).
// Returns: resolved.
// :param namespace => 'demo'
// :param ids => []
UNWIND $ids AS id
MATCH (x:Contradiction {namespace: $namespace, contradiction_id: id})
WHERE x.status = 'open'
SET x.status = 'resolved', x.resolved_at = datetime()
WITH x
CALL (x) {
  UNWIND x.measurement_ids AS id
  MATCH (e:StateEvidence {namespace: $namespace, measurement_id: id, transform: x.transform,
                         params_json: x.params_json})
  REMOVE e.disputed
}
CALL (x) {
  MATCH (r:EvidenceRollup {namespace: $namespace, measurement_id: x.state, transform: x.transform,
                          params_json: x.params_json})
  REMOVE r.disputed
}
RETURN count(x) AS resolved
