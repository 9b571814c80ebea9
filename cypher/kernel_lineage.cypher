// How a kernel evolved: its ancestors along DERIVED_FROM, nearest first, with the transform and
// outcome of each step (shortest path to each ancestor).
// Parameters: $namespaces, $kernel_id, $max_depth.
// Returns: kernel_id, task, variant, transform, attempt_key, depth (0 = the kernel itself).
// :param namespaces => ['demo']
// :param kernel_id => 'k1'
// :param max_depth => 50
MATCH (k:Kernel {kernel_id: $kernel_id})
WHERE k.namespace IN $namespaces
MATCH path = (k)-[:DERIVED_FROM*0..50]->(ancestor:Kernel)
WHERE length(path) <= $max_depth
WITH ancestor, min(length(path)) AS depth, collect(path) AS paths
WITH ancestor, depth, [p IN paths WHERE length(p) = depth][0] AS path
WITH ancestor, depth, CASE WHEN depth = 0 THEN null ELSE relationships(path)[depth - 1] END AS step
RETURN ancestor.kernel_id AS kernel_id, ancestor.task AS task, ancestor.variant AS variant,
       step.transform AS transform, step.attempt_key AS attempt_key, depth
ORDER BY depth
