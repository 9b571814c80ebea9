// A leaderboard per parameter setting: each (transform, params) tried, how often it was kept and the
// speedups it gave, so a good setting of a transform is told from a harmful one.
// Parameters: $namespaces, $transform (or null for all), $task (or null), $target (or null), $limit.
// Returns: transform, params (canonical JSON), attempts, kept, keep_rate, geomean_speedup (of the timed
//   attempts), best_speedup, tasks, targets; the best geomean first.
// :param namespaces => ['tour']
// :param transform => null
// :param task => null
// :param target => 'h100-sm90'
// :param limit => 25
MATCH (a:Attempt)
WHERE a.namespace IN $namespaces AND ($transform IS NULL OR a.transform = $transform)
  AND ($task IS NULL OR a.task = $task) AND ($target IS NULL OR a.target = $target)
WITH a.transform AS transform, a.params_json AS params, count(a) AS attempts,
     sum(CASE WHEN a.outcome = 'kept' THEN 1 ELSE 0 END) AS kept, avg(a.log_speedup) AS mean_log_speedup,
     max(a.speedup) AS best_speedup, collect(DISTINCT a.task) AS tasks, collect(DISTINCT a.target) AS targets
RETURN transform, params, attempts, kept, toFloat(kept) / attempts AS keep_rate,
       CASE WHEN mean_log_speedup IS NULL THEN null ELSE exp(mean_log_speedup) END AS geomean_speedup,
       best_speedup, tasks, targets
ORDER BY geomean_speedup DESC, attempts DESC, transform, params
LIMIT $limit
