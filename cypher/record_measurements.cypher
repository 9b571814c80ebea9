// Record kernels measured on a target outside any attempt (a published timing with no partner to
// pair it with), after record_vocabulary.cypher merged their access patterns. Idempotent: the
// measurement is MERGEd on its content id and linked only when this call created it.
// Parameters: $namespace, $write_token (a fresh random string per call), $rows: list of maps
//   {key, target, kernel: {kernel_id, patterns, props}, measurement: {measurement_id, props}}.
// Returns: key, created (false when the measurement was already stored).
// :param namespace => 'demo'
// :param write_token => 'browser-2'
// :param rows => [{key: 'browser:m1', target: 'cpu-native', kernel: {kernel_id: 'k0', patterns: ['dense-matmul'], props: {task: 'matmul', backend: 'c', family: 'dense-matmul', variant: 'naive', source: 'void kernel(){}'}}, measurement: {measurement_id: 'm1', props: {kernel_id: 'k0', task: 'matmul', target: 'cpu-native', median_ns: 1000.0, trials: 10, correct: true, static: false, counter_source: 'kernelbench_timing', counters_json: '{}', signature: [], signature_version: 1, signature_missing: [], tool_versions_json: '{}', record_key: 'browser:m1', run_id: 'browser', note: ''}}}]
UNWIND $rows AS row
MATCH (h:HardwareTarget {namespace: $namespace, name: row.target})
MERGE (k:Kernel {namespace: $namespace, kernel_id: row.kernel.kernel_id})
  ON CREATE SET k += row.kernel.props, k.created_at = datetime(), k.write_token = $write_token
MERGE (m:Measurement {namespace: $namespace, measurement_id: row.measurement.measurement_id})
  ON CREATE SET m += row.measurement.props, m.recorded_at = datetime(), m.write_token = $write_token
WITH row, h, k, m, m.write_token = $write_token AS created
CALL (row, h, k, m, created) {
  WITH * WHERE created
  MERGE (m)-[:OF]->(k)
  MERGE (m)-[:ON]->(h)
  WITH row, k
  UNWIND [x IN row.kernel.patterns WHERE k.write_token = $write_token] AS name
  MATCH (ap:AccessPattern {namespace: $namespace, name: name})
  MERGE (k)-[:EXHIBITS]->(ap)
}
RETURN row.key AS key, created
