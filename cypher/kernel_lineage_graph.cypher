// How a kernel evolved, as a graph for Neo4j Browser: the kernel and every ancestor along
// DERIVED_FROM (each relationship carries the transform and attempt key of the step).
// kernel_lineage.cypher returns the same steps as rows; this one is for the graph view.
// Parameters: $namespaces, $kernel_id, $max_depth.
// Returns: path, one per ancestor (depth 0 is the kernel alone).
// :param namespaces => ['demo']
// :param kernel_id => 'k1'
// :param max_depth => 50
MATCH (k:Kernel {kernel_id: $kernel_id})
WHERE k.namespace IN $namespaces
MATCH path = (k)-[:DERIVED_FROM*0..50]->(:Kernel)
WHERE length(path) <= $max_depth
RETURN path
