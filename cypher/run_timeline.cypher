// A run's (or an agent's) attempts in the order they were recorded: what it tried, what came of it,
// and the best speedup over the run's start so far (the product of its kept steps' speedups).
// Parameters: $namespaces, $run_id (or null), $agent (or null), $limit. Give one of run_id, agent.
// Returns: recorded_at, run_id, agent, attempt_key, task, target, transform, params, outcome, speedup,
//   so_far (per run), diagnosis; oldest first.
// :param namespaces => ['tour']
// :param run_id => 'tour-h100-sm90-softmax'
// :param agent => null
// :param limit => 100
MATCH (a:Attempt)
WHERE a.namespace IN $namespaces AND ($run_id IS NULL OR a.run_id = $run_id)
  AND ($agent IS NULL OR a.agent = $agent) AND ($run_id IS NOT NULL OR $agent IS NOT NULL)
WITH a ORDER BY a.created_at, a.attempt_key
WITH a.run_id AS run_id, collect(a) AS attempts
UNWIND range(0, size(attempts) - 1) AS i
WITH run_id, attempts[i] AS a,
     reduce(gain = 1.0, b IN attempts[0..i + 1] |
            gain * CASE WHEN b.outcome = 'kept' AND b.speedup IS NOT NULL THEN b.speedup ELSE 1.0 END) AS so_far
RETURN a.created_at AS recorded_at, run_id, a.agent AS agent, a.attempt_key AS attempt_key, a.task AS task,
       a.target AS target, a.transform AS transform, a.params_json AS params, a.outcome AS outcome,
       a.speedup AS speedup, so_far, a.diagnosis AS diagnosis
ORDER BY recorded_at, attempt_key
LIMIT $limit
