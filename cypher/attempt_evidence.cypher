// The evidence behind a recommendation: the attempts it came from, with both kernels, the target,
// the state they started from and what they measured.
// Parameters: $namespaces, $attempt_keys (list).
// Returns: one map per attempt.
// :param {namespaces: ['demo'], attempt_keys: ['browser:1']}
UNWIND $attempt_keys AS key
MATCH (a:Attempt {attempt_key: key})-[:FROM]->(p:Kernel)
WHERE a.namespace IN $namespaces
MATCH (a)-[:PRODUCED]->(c:Kernel)
OPTIONAL MATCH (a)-[:FROM_STATE]->(pm:Measurement)
OPTIONAL MATCH (a)-[:RESULTED_IN]->(cm:Measurement)
RETURN a {.attempt_key, .run_id, .agent, .target, .task, .transform, .params_json, .outcome, .speedup,
          .diagnosis, .rationale, created_at: toString(a.created_at),
          parent_kernel_id: p.kernel_id, parent_variant: p.variant,
          child_kernel_id: c.kernel_id, child_variant: c.variant,
          parent_measurement_id: pm.measurement_id, parent_median_ns: pm.median_ns,
          parent_signature: coalesce(pm.signature, pm.merged_signature), child_measurement_id: cm.measurement_id,
          child_median_ns: cm.median_ns} AS attempt
