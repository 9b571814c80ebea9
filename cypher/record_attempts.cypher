// Record a batch of attempts, each with its kernels, transform, access patterns and measurements,
// in one transaction. Idempotent: every node is MERGEd on its constrained natural key and only
// written ON CREATE, so a replay, or a concurrent duplicate, changes nothing.
// Parameters: $namespace, $write_token (a fresh random string per call), $rows: list of maps
//   {attempt_key, target, transform, attempt: {flat props}, parent: {kernel_id, patterns, props},
//    child: {...}, parent_measurements: [0..1 of {measurement_id, props}], child_measurements: [0..1]}
// Returns: attempt_key, created (false when the attempt was already stored).
// :param {namespace: 'demo', write_token: 'browser-1', rows: [{attempt_key: 'browser:1', target: 'cpu-native', transform: 'unroll', attempt: {run_id: 'browser', agent: 'me', target: 'cpu-native', task: 'matmul', outcome: 'kept', speedup: 1.5, log_speedup: 0.405, params_json: '{}', diagnosis: '', rationale: ''}, parent: {kernel_id: 'k0', patterns: ['dense-matmul'], props: {task: 'matmul', backend: 'c', family: 'dense-matmul', variant: 'naive', source: 'void kernel(){}'}}, child: {kernel_id: 'k1', patterns: ['dense-matmul'], props: {task: 'matmul', backend: 'c', family: 'dense-matmul', variant: 'unroll4', source: 'void kernel(){ }'}}, parent_measurements: [], child_measurements: []}]}
UNWIND $rows AS row
MATCH (h:HardwareTarget {namespace: $namespace, name: row.target})
MERGE (a:Attempt {namespace: $namespace, attempt_key: row.attempt_key})
  ON CREATE SET a += row.attempt, a.write_token = $write_token, a.created_at = datetime()
WITH row, h, a, a.write_token = $write_token AS created
CALL (row, h, a, created) {
  WITH * WHERE created
  MERGE (t:Transform {namespace: $namespace, name: row.transform})
  MERGE (p:Kernel {namespace: $namespace, kernel_id: row.parent.kernel_id})
    ON CREATE SET p += row.parent.props, p.created_at = datetime()
  MERGE (c:Kernel {namespace: $namespace, kernel_id: row.child.kernel_id})
    ON CREATE SET c += row.child.props, c.created_at = datetime()
  MERGE (a)-[:APPLIED]->(t)
  MERGE (a)-[:FROM]->(p)
  MERGE (a)-[:PRODUCED]->(c)
  MERGE (a)-[:ON_TARGET]->(h)
  MERGE (c)-[:DERIVED_FROM {attempt_key: row.attempt_key, transform: row.transform}]->(p)
  FOREACH (name IN row.parent.patterns + row.child.patterns |
    MERGE (ap:AccessPattern {namespace: $namespace, name: name}))
  WITH row, h, a, p, c
  CALL (row, p, c) {
    UNWIND [x IN row.parent.patterns | [p, x]] + [x IN row.child.patterns | [c, x]] AS pair
    WITH pair[0] AS kernel, pair[1] AS name
    MATCH (ap:AccessPattern {namespace: $namespace, name: name})
    MERGE (kernel)-[:EXHIBITS]->(ap)
  }
  FOREACH (m IN row.parent_measurements |
    MERGE (pm:Measurement {namespace: $namespace, measurement_id: m.measurement_id})
      ON CREATE SET pm += m.props, pm.recorded_at = datetime()
    SET pm.explored = true
    MERGE (pm)-[:OF]->(p)
    MERGE (pm)-[:ON]->(h)
    MERGE (a)-[:FROM_STATE]->(pm))
  FOREACH (m IN row.child_measurements |
    MERGE (cm:Measurement {namespace: $namespace, measurement_id: m.measurement_id})
      ON CREATE SET cm += m.props, cm.recorded_at = datetime()
    MERGE (cm)-[:OF]->(c)
    MERGE (cm)-[:ON]->(h)
    MERGE (a)-[:RESULTED_IN]->(cm))
}
RETURN row.attempt_key AS attempt_key, created
