// The shared vocabulary nodes a batch of attempts refers to (transforms, access patterns), merged
// first and in sorted order, so that concurrent batches take their locks in the same order.
// Parameters: $namespace, $transforms (sorted list of names), $patterns (sorted list of names).
// Returns: transforms, patterns (how many names were merged).
// :param namespace => 'demo'
// :param transforms => ['unroll']
// :param patterns => ['dense-matmul']
CALL (*) {
  UNWIND $transforms AS name
  MERGE (:Transform {namespace: $namespace, name: name})
}
CALL (*) {
  UNWIND $patterns AS name
  MERGE (:AccessPattern {namespace: $namespace, name: name})
}
RETURN size($transforms) AS transforms, size($patterns) AS patterns
