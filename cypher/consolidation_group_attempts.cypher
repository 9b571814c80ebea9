// Consolidation, step 3: the attempts behind groups that may disagree: for each group, the attempts
// made from any of its states (a state and its re-measurements) with one transform and setting,
// with both timings' medians and IQRs (the noise) and the parent state's evaluator version.
// Parameters: $namespace, $groups (list of {group_id, measurement_ids, transform, params_json}).
// Returns: group_id, attempt_key, outcome, log_speedup, child_kernel_id, parent_median_ns,
//   parent_iqr_ns, child_median_ns, child_iqr_ns, evaluator_version.
// :param namespace => 'demo'
// :param groups => [{group_id: 'g1', measurement_ids: ['abc'], transform: 'unroll', params_json: '{}'}]
UNWIND $groups AS g
MATCH (m:Measurement {namespace: $namespace})
WHERE m.measurement_id IN g.measurement_ids
MATCH (a:Attempt)-[:FROM_STATE]->(m)
WHERE a.transform = g.transform AND a.params_json = g.params_json
  AND a.implausible IS NULL AND a.quarantined IS NULL  // never evidence (schema 0015)
MATCH (a)-[:PRODUCED]->(child:Kernel)
OPTIONAL MATCH (a)-[:RESULTED_IN]->(cm:Measurement)
RETURN g.group_id AS group_id, a.attempt_key AS attempt_key, a.outcome AS outcome,
       a.log_speedup AS log_speedup, child.kernel_id AS child_kernel_id,
       m.median_ns AS parent_median_ns, m.iqr_ns AS parent_iqr_ns,
       cm.median_ns AS child_median_ns, cm.iqr_ns AS child_iqr_ns,
       m.evaluator_version AS evaluator_version
ORDER BY group_id, attempt_key
