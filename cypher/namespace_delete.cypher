// Delete every node of a namespace (API keys included) with its relationships, committing every
// $batch_size nodes so that a namespace of millions fits in memory. It must run in an implicit
// (auto-commit) transaction: `kernelgraph namespaces delete` and DELETE /v1/namespaces/{namespace}.
// Interrupted, it leaves whole batches deleted and runs again to finish.
// Parameters: $namespace, $batch_size. Returns: nothing.
// :param namespace => 'demo'
// :param batch_size => 5000
MATCH (n)
WHERE n.namespace = $namespace
CALL (n) {
  DETACH DELETE n
} IN TRANSACTIONS OF $batch_size ROWS
