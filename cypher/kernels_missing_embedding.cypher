// Kernels whose source has not been embedded yet (embedding is deferred so recording stays fast).
// Parameters: $namespaces, $limit. Returns: namespace, kernel_id, source.
// :param namespaces => ['demo']
// :param limit => 256
MATCH (k:Kernel)
WHERE k.namespace IN $namespaces AND k.source_embedding IS NULL
RETURN k.namespace AS namespace, k.kernel_id AS kernel_id, k.source AS source
LIMIT $limit
