// Transforms never tried on a task (on a target, or on any): what is left to explore, with what each
// did elsewhere in the namespaces. The candidates are $transforms (e.g. the vocabulary's names,
// GET /v1/vocabulary) or, when null, every transform recorded in the namespaces.
// Parameters: $namespaces, $task, $target (or null for any target), $transforms (list or null).
// Returns: transform, attempts_elsewhere, kept_elsewhere, best_speedup_elsewhere, tasks_elsewhere
//   (up to 5); the transforms with the most success elsewhere first.
// :param namespaces => ['tour']
// :param task => 'matmul'
// :param target => 'cpu-x86-64-v2'
// :param transforms => ['tile', 'interchange', 'unroll', 'vectorize', 'parallelize', 'schedule', 'fuse', 'block_for_cache', 'change_layout', 'split_reduction', 'privatize', 'strength_reduce', 'nontemporal']
WITH coalesce($transforms, COLLECT { MATCH (t:Transform) WHERE t.namespace IN $namespaces RETURN DISTINCT t.name })
     AS candidates
UNWIND candidates AS transform
WITH DISTINCT transform
WHERE NOT EXISTS {
  MATCH (a:Attempt)
  WHERE a.namespace IN $namespaces AND a.transform = transform AND a.task = $task
    AND ($target IS NULL OR a.target = $target)
}
CALL (transform) {
  OPTIONAL MATCH (b:Attempt)
  WHERE b.namespace IN $namespaces AND b.transform = transform
  RETURN count(b) AS attempts_elsewhere, sum(CASE WHEN b.outcome = 'kept' THEN 1 ELSE 0 END) AS kept_elsewhere,
         max(b.speedup) AS best_speedup_elsewhere, collect(DISTINCT b.task)[..5] AS tasks_elsewhere
}
RETURN transform, attempts_elsewhere, kept_elsewhere, best_speedup_elsewhere, tasks_elsewhere
ORDER BY kept_elsewhere DESC, attempts_elsewhere DESC, transform
